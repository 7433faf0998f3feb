package vm

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"sigs.k8s.io/yaml"
)

// crdYAML is config/crd/bases' VirtualMachine CRD, copied here by `make
// manifests` (and checked by `make verify`), so that the binary carries
// the schema it was built with.
//
//go:embed crd/virtualmachines.yaml
var crdYAML []byte

// CRDRevisionAnnotation records which schema a CRD was registered with:
// the hash of the embedded CRD. A CRD with another value (or none) is
// updated to this controller's.
const CRDRevisionAnnotation = "cloudnative.kubeharness.dev/crd-revision"

// CRD returns the VirtualMachine CustomResourceDefinition this binary
// carries, annotated with its revision.
func CRD() (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(crdYAML, crd); err != nil {
		return nil, fmt.Errorf("the embedded VirtualMachine CRD does not parse: %w", err)
	}
	sum := sha256.Sum256(crdYAML)
	if crd.Annotations == nil {
		crd.Annotations = map[string]string{}
	}
	crd.Annotations[CRDRevisionAnnotation] = hex.EncodeToString(sum[:8])
	return crd, nil
}

// CRDEstablishTimeout bounds how long RegisterCRD waits for the API
// server to serve the CRD.
const CRDEstablishTimeout = time.Minute

// RegisterCRD creates the VirtualMachine CRD, or updates one registered
// with another schema, and waits until the API server serves it
// (Established) under the names it asks for (NamesAccepted): a controller
// that registers its own resource at start-up.
func RegisterCRD(ctx context.Context, client apiextensionsclient.Interface) error {
	want, err := CRD()
	if err != nil {
		return err
	}
	logger := klog.FromContext(ctx)
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	// The API server writes the CRD's status while it establishes it; a
	// conflicting update reads the CRD again and retries.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		got, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			if _, err := crds.Create(ctx, want, metav1.CreateOptions{FieldManager: ControllerName}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating CRD %s: %w", want.Name, err)
			}
			logger.Info("Registered the CRD", "crd", want.Name, "revision", want.Annotations[CRDRevisionAnnotation])
			return nil
		case err != nil:
			return fmt.Errorf("reading CRD %s: %w", want.Name, err)
		case got.Annotations[CRDRevisionAnnotation] == want.Annotations[CRDRevisionAnnotation]:
			return nil
		}
		upd := got.DeepCopy()
		upd.Spec = want.Spec
		if upd.Annotations == nil {
			upd.Annotations = map[string]string{}
		}
		upd.Annotations[CRDRevisionAnnotation] = want.Annotations[CRDRevisionAnnotation]
		if _, err := crds.Update(ctx, upd, metav1.UpdateOptions{FieldManager: ControllerName}); err != nil {
			if apierrors.IsConflict(err) {
				return err
			}
			return fmt.Errorf("updating CRD %s from revision %q: %w", want.Name, got.Annotations[CRDRevisionAnnotation], err)
		}
		logger.Info("Updated the CRD", "crd", want.Name, "from", got.Annotations[CRDRevisionAnnotation], "to", want.Annotations[CRDRevisionAnnotation])
		return nil
	})
	if err != nil {
		return err
	}
	var last *apiextensionsv1.CustomResourceDefinition
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, CRDEstablishTimeout, true, func(ctx context.Context) (bool, error) {
		crd, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			return false, nil //nolint:nilerr // keep polling through transient errors until the timeout
		}
		last = crd
		return condition(crd, apiextensionsv1.Established) && condition(crd, apiextensionsv1.NamesAccepted), nil
	})
	if err != nil && ctx.Err() != nil {
		return fmt.Errorf("stopped while waiting for CRD %s to be served: %w", want.Name, err)
	}
	if err != nil {
		conds := "no conditions yet"
		if last != nil {
			conds = fmt.Sprintf("%+v", last.Status.Conditions)
		}
		return fmt.Errorf("CRD %s is not served after %s (%s): %w", want.Name, CRDEstablishTimeout, conds, err)
	}
	return nil
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}
