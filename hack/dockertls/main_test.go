package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEnsureMakesMutualTLSMaterialAndKeepsIt(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	names := []string{ServerName, "127.0.0.1"}
	made, err := ensure(dir, names, now)
	if err != nil || !made {
		t.Fatalf("ensure = %v, %v; want new material", made, err)
	}
	before, _ := os.ReadFile(filepath.Join(dir, "client", "cert.pem"))
	if made, err := ensure(dir, names, now); err != nil || made {
		t.Fatalf("second ensure = %v, %v; want the material kept", made, err)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "client", "cert.pem")); string(after) != string(before) {
		t.Error("good material was rewritten")
	}
	if info, err := os.Stat(filepath.Join(dir, "client", "key.pem")); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("client key mode %v, %v; want 0600", info.Mode(), err)
	}

	// A daemon serving server-cert.pem and asking for a client certificate,
	// and a client with client/ that trusts only client/ca.pem.
	serverCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "server-cert.pem"), filepath.Join(dir, "server-key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	caPEM, _ := os.ReadFile(filepath.Join(dir, "client", "ca.pem"))
	pool.AppendCertsFromPEM(caPEM)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{serverCert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			_ = c.(*tls.Conn).Handshake()
			_, _ = c.Write([]byte("ok"))
			c.Close()
		}
	}()
	clientCert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client", "cert.pem"), filepath.Join(dir, "client", "key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn := tls.Client(raw, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{clientCert}, ServerName: ServerName})
	defer conn.Close()
	buf := make([]byte, 2)
	if _, err := conn.Read(buf); err != nil || string(buf) != "ok" {
		t.Fatalf("mutual TLS with the material failed: %q, %v", buf, err)
	}

	// Material about to expire, or lacking a name asked for, is made again.
	if made, err := ensure(dir, names, now.Add(lifetime-keepFresh/2)); err != nil || !made {
		t.Errorf("ensure near expiry = %v, %v; want new material", made, err)
	}
	if made, err := ensure(dir, append(names, "10.0.0.9"), time.Now()); err != nil || !made {
		t.Errorf("ensure with a new name = %v, %v; want new material", made, err)
	}
}

// newKeyPEM is an EC key no certificate of the material belongs to.
func newKeyPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func mustEnsure(t *testing.T, dir string) {
	t.Helper()
	if _, err := ensure(dir, []string{ServerName}, time.Now()); err != nil {
		t.Fatal(err)
	}
}

func perm(t *testing.T, path string) os.FileMode {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info.Mode().Perm()
}

// Directories that exist with looser modes are tightened to 0700, whether
// the material in them is made or kept.
func TestEnsureTightensExistingDirectories(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tls")
	for _, d := range []string{dir, filepath.Join(dir, "client")} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	mustEnsure(t, dir)
	for _, d := range []string{dir, filepath.Join(dir, "client")} {
		if got := perm(t, d); got != 0o700 {
			t.Errorf("%s has mode %v after making the material; want 0700", d, got)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if made, err := ensure(dir, []string{ServerName}, time.Now()); err != nil || made {
		t.Fatalf("ensure over good material = %v, %v; want it kept", made, err)
	}
	for _, d := range []string{dir, filepath.Join(dir, "client")} {
		if got := perm(t, d); got != 0o700 {
			t.Errorf("%s has mode %v after keeping the material; want 0700", d, got)
		}
	}
}

// A file left where a temporary file of the writer would go (a crashed
// run's, or anyone's) gives the keys neither its mode nor its content.
func TestEnsureKeysAre0600DespiteStrayTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "client"), 0o700); err != nil {
		t.Fatal(err)
	}
	keys := []string{"ca-key.pem", "server-key.pem", "client/key.pem"}
	for _, k := range keys {
		p := filepath.Join(dir, k) + ".tmp"
		if err := os.WriteFile(p, []byte("stray"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	mustEnsure(t, dir)
	for _, k := range keys {
		if got := perm(t, filepath.Join(dir, k)); got != 0o600 {
			t.Errorf("%s has mode %v; want 0600", k, got)
		}
	}
}

// No write follows a symlink: not one planted where a temporary file goes,
// not the client directory, and a key that is a symlink is not kept.
func TestEnsureFollowsNoSymlinks(t *testing.T) {
	t.Run("temporary file", func(t *testing.T) {
		dir, outside := t.TempDir(), filepath.Join(t.TempDir(), "stolen")
		if err := os.WriteFile(outside, []byte("untouched"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(dir, "client"), 0o700); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"ca-key.pem", "server-key.pem", "client/key.pem"} {
			if err := os.Symlink(outside, filepath.Join(dir, k)+".tmp"); err != nil {
				t.Fatal(err)
			}
		}
		mustEnsure(t, dir)
		if data, _ := os.ReadFile(outside); string(data) != "untouched" {
			t.Errorf("a symlink's target was written: %q", data)
		}
		for _, k := range []string{"ca-key.pem", "server-key.pem", "client/key.pem"} {
			if info, err := os.Lstat(filepath.Join(dir, k)); err != nil || !info.Mode().IsRegular() {
				t.Errorf("%s: %v, %v; want a regular file", k, info.Mode(), err)
			}
		}
	})
	t.Run("client directory", func(t *testing.T) {
		dir, outside := t.TempDir(), t.TempDir()
		if err := os.Symlink(outside, filepath.Join(dir, "client")); err != nil {
			t.Fatal(err)
		}
		_, err := ensure(dir, []string{ServerName}, time.Now())
		if err == nil || !strings.Contains(err.Error(), "symlink") {
			t.Errorf("ensure with client/ a symlink = %v; want an error saying so", err)
		}
		if entries, _ := os.ReadDir(outside); len(entries) > 0 {
			t.Errorf("material was written through the symlink: %v", entries)
		}
	})
	t.Run("key", func(t *testing.T) {
		dir := t.TempDir()
		mustEnsure(t, dir)
		key := filepath.Join(dir, "client", "key.pem")
		copyOf := filepath.Join(t.TempDir(), "key.pem")
		data, err := os.ReadFile(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(copyOf, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(key); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(copyOf, key); err != nil {
			t.Fatal(err)
		}
		if err := check(dir, []string{ServerName}, time.Now()); err == nil {
			t.Error("check accepts a client key that is a symlink")
		}
		mustEnsure(t, dir)
		if info, err := os.Lstat(key); err != nil || !info.Mode().IsRegular() {
			t.Errorf("client/key.pem: %v, %v; want a regular file", info.Mode(), err)
		}
	})
}

// check fails, saying which file, unless every key is there, is private
// and belongs to its certificate.
func TestCheckRejectsKeysThatDoNotMatchOrAreMissing(t *testing.T) {
	for _, tc := range []struct {
		name, file, want string
		spoil            func(t *testing.T, path string)
	}{
		{"client key of another pair", "client/key.pem", "client/key.pem", func(t *testing.T, p string) {
			if err := os.WriteFile(p, newKeyPEM(t), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"server key of another pair", "server-key.pem", "server-key.pem", func(t *testing.T, p string) {
			if err := os.WriteFile(p, newKeyPEM(t), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"CA key of another pair", "ca-key.pem", "ca-key.pem", func(t *testing.T, p string) {
			if err := os.WriteFile(p, newKeyPEM(t), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"CA key missing", "ca-key.pem", "ca-key.pem", func(t *testing.T, p string) {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}},
		{"client key not PEM", "client/key.pem", "client/key.pem", func(t *testing.T, p string) {
			if err := os.WriteFile(p, []byte("not a key"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"client key readable by others", "client/key.pem", "client/key.pem", func(t *testing.T, p string) {
			if err := os.Chmod(p, 0o644); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			mustEnsure(t, dir)
			tc.spoil(t, filepath.Join(dir, tc.file))
			err := check(dir, []string{ServerName}, time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("check = %v; want an error naming %s", err, tc.want)
			}
			if made, err := ensure(dir, []string{ServerName}, time.Now()); err != nil || !made {
				t.Fatalf("ensure = %v, %v; want new material", made, err)
			}
			if err := check(dir, []string{ServerName}, time.Now()); err != nil {
				t.Fatalf("check after ensure = %v", err)
			}
		})
	}
}
