//go:build unix

// Control planes run on Unix only (harness/process), so this test does too.

package bundle_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeharness/kubeharness/harness/bundle"
	"github.com/kubeharness/kubeharness/harness/controlplane"
	"github.com/kubeharness/kubeharness/harness/internal/testbins"
)

// A spec's namespace on a real API server holds a Secret made the way
// kubectl apply makes one (stringData, and the last-applied annotation
// that repeats it) and one with binary data: the bundle's objects.yaml
// names the Secrets and their keys, and holds none of their values, in
// any form.
func TestWriteToARealAPIServer(t *testing.T) {
	dir, root := testbins.Need(t)
	cp, err := controlplane.Start(controlplane.Options{BinaryDir: dir, TemplateDir: testbins.TemplateDir(root)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "bundle-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const password, token = "hunter2-s3cret-pw", "tok-9f2c1e0d-real-api-server"
	key := []byte{0x00, 0xff, 0x10, 'k', 'e', 'y', 0x80, 0x7f}
	lastApplied := `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db","namespace":"` + ns.Name + `"},` +
		`"stringData":{"password":"` + password + `","token":"` + token + `"}}`
	secrets := []*corev1.Secret{{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Annotations: map[string]string{corev1.LastAppliedConfigAnnotation: lastApplied}},
		StringData: map[string]string{"password": password, "token": token},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "tls"},
		Data:       map[string][]byte{"key": key},
	}}
	for _, s := range secrets {
		if _, err := cs.CoreV1().Secrets(ns.Name).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	out := bundle.Dir(t.TempDir(), "widgets keep a secret")
	b := bundle.Bundle{Config: cp.Config, Namespace: ns.Name, Start: time.Now(), End: time.Now()}
	if err := b.Write(ctx, out); err != nil {
		t.Fatal(err)
	}
	objects, err := os.ReadFile(filepath.Join(out, bundle.ObjectsFile))
	if err != nil {
		t.Fatal(err)
	}
	text := string(objects)
	for _, v := range []string{password, token, string(key)} {
		b64 := base64.StdEncoding.EncodeToString([]byte(v))
		for _, form := range []string{v, b64, b64[:8]} {
			if strings.Contains(text, form) {
				t.Errorf("objects.yaml shows a Secret's value %q (as %q)", v, form)
			}
		}
	}
	for _, want := range []string{
		"name: db", "name: tls",
		"password: '" + bundle.Redacted([]byte(password)) + "'",
		"token: '" + bundle.Redacted([]byte(token)) + "'",
		"key: '" + bundle.Redacted(key) + "'",
		"last-applied-configuration: '<left out of the bundle: ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("objects.yaml lacks %q:\n%s", want, text)
		}
	}
	if t.Failed() {
		t.Logf("objects.yaml:\n%s", text)
	}
}
