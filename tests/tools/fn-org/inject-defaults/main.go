// inject-defaults is a platform team's transformer: it adds the organisation's labels to
// every resource that does not set them, and gives every container of a workload the
// default requests and a restricted securityContext when it has none of its own.
package main

import (
	"os"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/framework/command"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Defaults is the function's config (kind Defaults).
type Defaults struct {
	Spec struct {
		Labels   map[string]string `json:"labels,omitempty"`
		Requests map[string]string `json:"requests,omitempty"`
		NonRoot  bool              `json:"runAsNonRoot,omitempty"`
	} `json:"spec"`
}

var workloads = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true, "Job": true}

func (d *Defaults) apply(n *yaml.RNode) error {
	labels := n.GetLabels()
	changed := false
	for k, v := range d.Spec.Labels {
		if _, ok := labels[k]; !ok {
			labels[k] = v
			changed = true
		}
	}
	if changed {
		if err := n.SetLabels(labels); err != nil {
			return err
		}
	}
	if !workloads[n.GetKind()] {
		return nil
	}
	containers, err := n.Pipe(yaml.Lookup("spec", "template", "spec", "containers"))
	if err != nil || containers == nil {
		return err
	}
	return containers.VisitElements(func(c *yaml.RNode) error {
		if len(d.Spec.Requests) > 0 {
			req, err := c.Pipe(yaml.LookupCreate(yaml.MappingNode, "resources", "requests"))
			if err != nil {
				return err
			}
			for k, v := range d.Spec.Requests {
				if req.Field(k) == nil {
					if err := req.PipeE(yaml.SetField(k, yaml.NewStringRNode(v))); err != nil {
						return err
					}
				}
			}
		}
		if d.Spec.NonRoot && c.Field("securityContext") == nil {
			sc, err := yaml.Parse("runAsNonRoot: true\nallowPrivilegeEscalation: false\ncapabilities:\n  drop: [ALL]\n")
			if err != nil {
				return err
			}
			return c.PipeE(yaml.SetField("securityContext", sc))
		}
		return nil
	})
}

func main() {
	d := &Defaults{}
	p := framework.SimpleProcessor{
		Config: d,
		Filter: kio.FilterFunc(func(items []*yaml.RNode) ([]*yaml.RNode, error) {
			for _, n := range items {
				if err := d.apply(n); err != nil {
					return nil, err
				}
			}
			return items, nil
		}),
	}
	if err := command.Build(p, command.StandaloneDisabled, false).Execute(); err != nil {
		os.Exit(1)
	}
}
