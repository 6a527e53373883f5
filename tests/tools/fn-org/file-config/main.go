// file-config turns files a kustomization mounts into the function (kustomize's `mounts`,
// read-only) into a ConfigMap: the key is the file's name, the value its content. A file
// that is missing or too large fails the render and names it.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/framework/command"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const maxFile = 512 << 10 // a ConfigMap holds at most 1 MiB; leave room for the rest

type FileConfig struct {
	Spec struct {
		Name  string   `json:"configMapName"`
		Files []string `json:"files"`
	} `json:"spec"`
}

func main() {
	cfg := &FileConfig{}
	p := framework.SimpleProcessor{
		Config: cfg,
		Filter: kio.FilterFunc(func(items []*yaml.RNode) ([]*yaml.RNode, error) {
			if cfg.Spec.Name == "" || len(cfg.Spec.Files) == 0 {
				return nil, fmt.Errorf("file-config: spec.configMapName and spec.files are required")
			}
			cm := yaml.NewMapRNode(nil)
			if err := cm.PipeE(yaml.SetField("apiVersion", yaml.NewStringRNode("v1"))); err != nil {
				return nil, err
			}
			_ = cm.PipeE(yaml.SetField("kind", yaml.NewStringRNode("ConfigMap")))
			if err := cm.SetName(cfg.Spec.Name); err != nil {
				return nil, err
			}
			data := map[string]string{}
			for _, f := range cfg.Spec.Files {
				st, err := os.Stat(f)
				if err != nil {
					return nil, fmt.Errorf("file-config: %s: %w (is it mounted? see the kustomization's mounts)", f, err)
				}
				if st.Size() > maxFile {
					return nil, fmt.Errorf("file-config: %s is %d bytes, over the %d-byte limit", f, st.Size(), maxFile)
				}
				b, err := os.ReadFile(f)
				if err != nil {
					return nil, fmt.Errorf("file-config: %w", err)
				}
				data[filepath.Base(f)] = string(b)
			}
			keys := make([]string, 0, len(data))
			for k := range data {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			d := yaml.NewMapRNode(nil)
			for _, k := range keys {
				if err := d.PipeE(yaml.SetField(k, yaml.NewStringRNode(data[k]))); err != nil {
					return nil, err
				}
			}
			if err := cm.PipeE(yaml.SetField("data", d)); err != nil {
				return nil, err
			}
			return append(items, cm), nil
		}),
	}
	if err := command.Build(p, command.StandaloneDisabled, false).Execute(); err != nil {
		os.Exit(1)
	}
}
