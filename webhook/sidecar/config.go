package sidecar

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kubeharness/kubeharness/webhook/safequantity"
)

// Config is what gets injected. Its zero value is not useful: start from
// DefaultConfig or BindFlags.
type Config struct {
	InitImage, SidecarImage         string
	InitResources, SidecarResources corev1.ResourceRequirements
}

// DefaultConfig is the injection of a manager started without flags.
func DefaultConfig() Config {
	return Config{
		InitImage:    "kubeharness/sidecar-init:v0.1.0",
		SidecarImage: "kubeharness/sidecar-proxy:v0.1.0",
		InitResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("16Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("50m"),
				corev1.ResourceMemory: resource.MustParse("32Mi"),
			},
		},
		SidecarResources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("10m"),
				corev1.ResourceMemory: resource.MustParse("32Mi"),
			},
			Limits: corev1.ResourceList{
				corev1.ResourceCPU:    resource.MustParse("100m"),
				corev1.ResourceMemory: resource.MustParse("64Mi"),
			},
		},
	}
}

// BindFlags registers the injection flags on fs, with DefaultConfig's values
// as defaults. The resource flags set the sidecar container's resources; the
// init container keeps InitResources.
func (c *Config) BindFlags(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.StringVar(&c.InitImage, "sidecar-init-image", d.InitImage, "image of the injected init container")
	fs.StringVar(&c.SidecarImage, "sidecar-image", d.SidecarImage, "image of the injected sidecar container")
	// Like fs.StringVar, binding sets the defaults now, so that the resource
	// flags have lists to write into; the init container's resources have
	// no flags and keep their defaults.
	c.SidecarResources, c.InitResources = d.SidecarResources, d.InitResources
	fs.Var(quantity{c.SidecarResources.Requests, corev1.ResourceCPU}, "sidecar-cpu-request", "CPU request of the injected sidecar container")
	fs.Var(quantity{c.SidecarResources.Requests, corev1.ResourceMemory}, "sidecar-memory-request", "memory request of the injected sidecar container")
	fs.Var(quantity{c.SidecarResources.Limits, corev1.ResourceCPU}, "sidecar-cpu-limit", "CPU limit of the injected sidecar container")
	fs.Var(quantity{c.SidecarResources.Limits, corev1.ResourceMemory}, "sidecar-memory-limit", "memory limit of the injected sidecar container")
}

// Validate rejects a Config whose injected Pods the API server would refuse:
// with the webhook failing closed, that would block every Pod creation in the
// injected namespaces.
func (c Config) Validate() error {
	var errs []error
	if c.InitImage == "" {
		errs = append(errs, errors.New("the init container image is empty"))
	}
	if c.SidecarImage == "" {
		errs = append(errs, errors.New("the sidecar container image is empty"))
	}
	errs = append(errs, validateResources(InitContainerName, c.InitResources)...)
	errs = append(errs, validateResources(SidecarContainerName, c.SidecarResources)...)
	return errors.Join(errs...)
}

func validateResources(container string, r corev1.ResourceRequirements) []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req := r.Requests[name]
		if limit, ok := r.Limits[name]; ok && req.Cmp(limit) > 0 {
			errs = append(errs, fmt.Errorf("%s: %s request %s exceeds its limit %s", container, name, req.String(), limit.String()))
		}
	}
	return errs
}

// quantity is a flag.Value setting one resource in a ResourceList.
type quantity struct {
	list corev1.ResourceList
	name corev1.ResourceName
}

func (q quantity) String() string {
	v, ok := q.list[q.name]
	if !ok {
		return ""
	}
	return v.String()
}

func (q quantity) Set(s string) error {
	v, err := safequantity.Parse(s)
	if err != nil {
		return fmt.Errorf("%q is not a resource quantity such as 100m or 64Mi: %w", s, err)
	}
	if v.Sign() < 0 {
		return fmt.Errorf("%q is negative", s)
	}
	q.list[q.name] = v
	return nil
}
