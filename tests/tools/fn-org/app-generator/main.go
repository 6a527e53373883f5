// app-generator expands one App (platform.example.com/v1) into the Deployment, Service,
// HorizontalPodAutoscaler and PodDisruptionBudget a team would otherwise write by hand.
// An App that cannot be expanded fails the render with results that name the field.
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	sigsyaml "sigs.k8s.io/yaml"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/fn/framework/command"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// App is the high-level resource application teams write.
type App struct {
	Metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels,omitempty"`
	} `json:"metadata"`
	Spec AppSpec `json:"spec"`
}

type AppSpec struct {
	Replicas    *int32      `json:"replicas,omitempty"`
	Containers  []Container `json:"containers"`
	Autoscaling *struct {
		MinReplicas          int32 `json:"minReplicas"`
		MaxReplicas          int32 `json:"maxReplicas"`
		TargetCPUUtilization int32 `json:"targetCPUUtilization"`
	} `json:"autoscaling,omitempty"`
	Monitoring *struct {
		Enabled bool   `json:"enabled"`
		Port    string `json:"port"`
		Path    string `json:"path,omitempty"`
	} `json:"monitoring,omitempty"`
}

type Container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Ports []struct {
		Name string `json:"name"`
		Port int32  `json:"port"`
	} `json:"ports,omitempty"`
	ConfigFrom  []string          `json:"configFrom,omitempty"`
	SecretsFrom []string          `json:"secretsFrom,omitempty"`
	Env         map[string]string `json:"env,omitempty"`
	Resources   *struct {
		CPU    string `json:"cpu"`
		Memory string `json:"memory"`
	} `json:"resources,omitempty"`
}

func fail(field, format string, args ...any) error {
	return framework.Results{{
		Message:  fmt.Sprintf(format, args...),
		Severity: framework.Error,
		Field:    &framework.Field{Path: field},
	}}
}

func (a *App) validate() error {
	if a.Metadata.Name == "" {
		return fail("metadata.name", "App needs a name")
	}
	if len(a.Spec.Containers) == 0 {
		return fail("spec.containers", "App %q has no containers: give at least one", a.Metadata.Name)
	}
	ports := map[string]bool{}
	for i, c := range a.Spec.Containers {
		if c.Name == "" || c.Image == "" {
			return fail(fmt.Sprintf("spec.containers[%d]", i), "App %q: container %d needs a name and an image", a.Metadata.Name, i)
		}
		for _, p := range c.Ports {
			ports[p.Name] = true
		}
		if c.Resources != nil {
			for what, q := range map[string]string{"cpu": c.Resources.CPU, "memory": c.Resources.Memory} {
				if _, err := resource.ParseQuantity(q); err != nil {
					return fail(fmt.Sprintf("spec.containers[%d].resources.%s", i, what), "App %q: %s %q is not a quantity", a.Metadata.Name, what, q)
				}
			}
		}
	}
	if as := a.Spec.Autoscaling; as != nil {
		if as.MinReplicas < 1 || as.MaxReplicas < as.MinReplicas {
			return fail("spec.autoscaling", "App %q: autoscaling needs 1 <= minReplicas <= maxReplicas (got %d..%d)", a.Metadata.Name, as.MinReplicas, as.MaxReplicas)
		}
	}
	if m := a.Spec.Monitoring; m != nil && m.Enabled && !ports[m.Port] {
		return fail("spec.monitoring.port", "App %q: monitoring port %q is not a container port", a.Metadata.Name, m.Port)
	}
	return nil
}

func (a *App) labels() map[string]string {
	l := map[string]string{"app.kubernetes.io/name": a.Metadata.Name, "app.kubernetes.io/managed-by": "app-generator"}
	for k, v := range a.Metadata.Labels {
		l[k] = v
	}
	return l
}

func (a *App) objects() []any {
	name, ns := a.Metadata.Name, a.Metadata.Namespace
	selector := map[string]string{"app.kubernetes.io/name": name}
	meta := metav1.ObjectMeta{Name: name, Namespace: ns, Labels: a.labels()}
	podAnnotations := map[string]string{}
	var svcPorts []corev1.ServicePort
	var containers []corev1.Container
	for _, c := range a.Spec.Containers {
		ct := corev1.Container{Name: c.Name, Image: c.Image}
		for _, p := range c.Ports {
			ct.Ports = append(ct.Ports, corev1.ContainerPort{Name: p.Name, ContainerPort: p.Port, Protocol: corev1.ProtocolTCP})
			svcPorts = append(svcPorts, corev1.ServicePort{Name: p.Name, Port: p.Port, TargetPort: intstr.FromString(p.Name), Protocol: corev1.ProtocolTCP})
			if m := a.Spec.Monitoring; m != nil && m.Enabled && m.Port == p.Name {
				path := m.Path
				if path == "" {
					path = "/metrics"
				}
				podAnnotations["prometheus.io/scrape"] = "true"
				podAnnotations["prometheus.io/port"] = fmt.Sprint(p.Port)
				podAnnotations["prometheus.io/path"] = path
			}
		}
		for _, n := range c.ConfigFrom {
			ct.EnvFrom = append(ct.EnvFrom, corev1.EnvFromSource{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
		}
		for _, n := range c.SecretsFrom {
			ct.EnvFrom = append(ct.EnvFrom, corev1.EnvFromSource{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: n}}})
		}
		keys := make([]string, 0, len(c.Env))
		for k := range c.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ct.Env = append(ct.Env, corev1.EnvVar{Name: k, Value: c.Env[k]})
		}
		if r := c.Resources; r != nil {
			q := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(r.CPU), corev1.ResourceMemory: resource.MustParse(r.Memory)}
			ct.Resources = corev1.ResourceRequirements{Requests: q, Limits: corev1.ResourceList{corev1.ResourceMemory: q[corev1.ResourceMemory]}}
		}
		containers = append(containers, ct)
	}
	replicas := a.Spec.Replicas
	if as := a.Spec.Autoscaling; as != nil {
		replicas = &as.MinReplicas
	}
	if replicas == nil {
		one := int32(1)
		replicas = &one
	}
	if len(podAnnotations) == 0 {
		podAnnotations = nil
	}
	out := []any{
		&appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: meta,
			Spec: appsv1.DeploymentSpec{
				Replicas: replicas,
				Selector: &metav1.LabelSelector{MatchLabels: selector},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: a.labels(), Annotations: podAnnotations},
					Spec:       corev1.PodSpec{Containers: containers},
				},
			},
		},
	}
	if len(svcPorts) > 0 {
		out = append(out, &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: meta,
			Spec:       corev1.ServiceSpec{Selector: selector, Ports: svcPorts},
		})
	}
	if as := a.Spec.Autoscaling; as != nil {
		target := as.TargetCPUUtilization
		if target == 0 {
			target = 80
		}
		out = append(out, &autoscalingv2.HorizontalPodAutoscaler{
			TypeMeta:   metav1.TypeMeta{APIVersion: "autoscaling/v2", Kind: "HorizontalPodAutoscaler"},
			ObjectMeta: meta,
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name},
				MinReplicas:    &as.MinReplicas,
				MaxReplicas:    as.MaxReplicas,
				Metrics: []autoscalingv2.MetricSpec{{
					Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricSource{
						Name:   corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &target},
					},
				}},
			},
		})
	}
	if *replicas > 1 {
		one := intstr.FromInt32(1)
		out = append(out, &policyv1.PodDisruptionBudget{
			TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
			ObjectMeta: meta,
			Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &one, Selector: &metav1.LabelSelector{MatchLabels: selector}},
		})
	}
	return out
}

func toNode(obj any) (*yaml.RNode, error) {
	b, err := sigsyaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	n, err := yaml.Parse(string(b))
	if err != nil {
		return nil, err
	}
	// typed structs marshal status and creationTimestamp; a rendered manifest has neither
	_ = n.PipeE(yaml.Clear("status"))
	if m := n.Field("metadata"); m != nil {
		_ = m.Value.PipeE(yaml.Clear("creationTimestamp"))
	}
	if t, err := n.Pipe(yaml.Lookup("spec", "template", "metadata")); err == nil && t != nil {
		_ = t.PipeE(yaml.Clear("creationTimestamp"))
	}
	if s := n.Field("spec"); s != nil && n.GetKind() == "Deployment" {
		_ = s.Value.PipeE(yaml.Clear("strategy")) // an empty strategy: the server's default
	}
	return n, nil
}

func main() {
	// A ResourceListProcessorFunc, not a SimpleProcessor: a SimpleProcessor's filter that
	// returns Results only records them and exits 0; an App that cannot be expanded must
	// fail the render, with the results written and the reason on stderr.
	p := framework.ResourceListProcessorFunc(func(rl *framework.ResourceList) error {
		app := &App{}
		if err := framework.LoadFunctionConfig(rl.FunctionConfig, app); err != nil {
			return fmt.Errorf("app-generator: reading the App: %w", err)
		}
		if err := app.validate(); err != nil {
			var r framework.Results
			if errors.As(err, &r) {
				rl.Results = append(rl.Results, r...)
			}
			return err
		}
		for _, o := range app.objects() {
			n, err := toNode(o)
			if err != nil {
				return fmt.Errorf("app-generator: %w", err)
			}
			rl.Items = append(rl.Items, n)
		}
		return nil
	})
	if err := command.Build(p, command.StandaloneDisabled, false).Execute(); err != nil {
		os.Exit(1)
	}
}
