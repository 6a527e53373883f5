// net-config reads a document from an internal HTTP service (a configuration server, say)
// and writes it into a ConfigMap. It needs the network: the kustomization grants it
// (`network: true`) and the cluster's NetworkPolicies decide what it may reach.
package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/framework/command"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

const maxBody = 256 << 10

type NetConfig struct {
	Spec struct {
		Name string `json:"configMapName"`
		URL  string `json:"url"`
		Key  string `json:"key"`
	} `json:"spec"`
}

func fetch(url string) (string, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s answered %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody+1))
	if err != nil {
		return "", err
	}
	if len(b) > maxBody {
		return "", fmt.Errorf("%s sent over %d bytes", url, maxBody)
	}
	return string(b), nil
}

func main() {
	cfg := &NetConfig{}
	p := framework.SimpleProcessor{
		Config: cfg,
		Filter: kio.FilterFunc(func(items []*yaml.RNode) ([]*yaml.RNode, error) {
			if cfg.Spec.Name == "" || cfg.Spec.URL == "" || cfg.Spec.Key == "" {
				return nil, fmt.Errorf("net-config: spec.configMapName, spec.url and spec.key are required")
			}
			body, err := fetch(cfg.Spec.URL)
			if err != nil {
				return nil, fmt.Errorf("net-config: %w", err)
			}
			cm, err := yaml.Parse("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata: {}\n")
			if err != nil {
				return nil, err
			}
			if err := cm.SetName(cfg.Spec.Name); err != nil {
				return nil, err
			}
			cm.SetDataMap(map[string]string{cfg.Spec.Key: body})
			return append(items, cm), nil
		}),
	}
	if err := command.Build(p, command.StandaloneDisabled, false).Execute(); err != nil {
		os.Exit(1)
	}
}
