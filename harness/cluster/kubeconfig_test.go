package cluster_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kubeharness/kubeharness/harness/cluster"
)

// A kubeconfig Kubeconfig wrote loads back (LoadKubeconfig) into a
// rest.Config that connects as the one it was written from.
func TestKubeconfigLoadsBackAsItsConfig(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("file token"), 0o600); err != nil {
		t.Fatal(err)
	}
	exec := &clientcmdapi.ExecConfig{Command: "credentials", Args: []string{"--for", "suite"}, APIVersion: "client.authentication.k8s.io/v1",
		Env: []clientcmdapi.ExecEnvVar{{Name: "A", Value: "b"}}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
	for _, tc := range []struct {
		name string
		cfg  *rest.Config
	}{
		{"a client certificate, impersonating", &rest.Config{
			Host:            "https://127.0.0.1:6443",
			TLSClientConfig: rest.TLSClientConfig{CAData: []byte("ca"), CertData: []byte("cert"), KeyData: []byte("key"), ServerName: "api"},
			Impersonate:     rest.ImpersonationConfig{UserName: "system:serviceaccount:ns:sa", UID: "u-1", Groups: []string{"g"}, Extra: map[string][]string{"k": {"v"}}},
		}},
		{"a token file", &rest.Config{Host: "https://api.example:443", BearerToken: "file token", BearerTokenFile: tokenFile,
			TLSClientConfig: rest.TLSClientConfig{Insecure: true}}},
		{"a bearer token", &rest.Config{Host: "https://api.example:443", BearerToken: "token"}},
		{"basic auth", &rest.Config{Host: "https://127.0.0.1:6443", Username: "admin", Password: "secret"}},
		{"a credential plugin", &rest.Config{Host: "https://api.example:443", ExecProvider: exec}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := cluster.Kubeconfig(tc.cfg, "suite")
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "kubeconfig")
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			got, _, err := cluster.LoadKubeconfig(path, "")
			if err != nil {
				t.Fatalf("loading what Kubeconfig wrote: %v\n%s", err, data)
			}
			want := rest.CopyConfig(tc.cfg)
			// Fields client-go fills in on load, not in what was written.
			got.UserAgent, got.QPS, got.Burst, got.Timeout = want.UserAgent, want.QPS, want.Burst, want.Timeout
			if got.ExecProvider != nil {
				got.ExecProvider.Config, got.ExecProvider.StdinUnavailable, got.ExecProvider.StdinUnavailableMessage = nil, false, ""
				got.ExecProvider.PluginPolicy = want.ExecProvider.PluginPolicy
			}
			if !reflect.DeepEqual(got.TLSClientConfig, want.TLSClientConfig) || got.Host != want.Host ||
				got.BearerToken != want.BearerToken || got.BearerTokenFile != want.BearerTokenFile ||
				got.Username != want.Username || got.Password != want.Password ||
				!reflect.DeepEqual(got.Impersonate, want.Impersonate) || !reflect.DeepEqual(got.ExecProvider, want.ExecProvider) {
				t.Errorf("loaded back\n%+v\nwant\n%+v\nfrom\n%s", got, want, data)
			}
		})
	}
}

// A TLS file is named when the config carries no data for it: a
// kubeconfig may not hold both.
func TestKubeconfigNamesTLSFilesWithoutData(t *testing.T) {
	data, err := cluster.Kubeconfig(&rest.Config{Host: "https://127.0.0.1:6443",
		TLSClientConfig: rest.TLSClientConfig{CAFile: "/pki/ca.crt", CertFile: "/pki/client.crt", KeyFile: "/pki/client.key", KeyData: []byte("key")}}, "files")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"certificate-authority: /pki/ca.crt", "client-certificate: /pki/client.crt", "client-key-data: "} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the kubeconfig lacks %q:\n%s", want, data)
		}
	}
	if strings.Contains(string(data), "client-key: ") {
		t.Errorf("the kubeconfig names the key file and holds its data:\n%s", data)
	}
	if _, err := cluster.Kubeconfig(&rest.Config{}, "none"); err == nil || !strings.Contains(err.Error(), "no Host") {
		t.Errorf("Kubeconfig of a config without a Host: %v, want an error naming the Host", err)
	}
}
