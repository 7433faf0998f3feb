package main

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
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
