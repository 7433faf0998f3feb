// Command smoke is the workload of the kind smoke specs, built in the run
// into a FROM-scratch image so the specs need no registry:
//
//	smoke hello        print a greeting naming this host, then exit 0
//	smoke serve        answer HTTP on :8080 with this host's name
//	smoke sleep        wait until terminated
//	smoke lookup NAME  resolve NAME through the Pod's DNS and print the addresses
//	smoke get URL      print the body of an HTTP GET of URL
//	smoke tlsget URL CAFILE
//	                   GET URL over TLS trusting only the CAs in CAFILE, and
//	                   print the serial number of the certificate it verified
//	smoke write FILE TEXT
//	                   write TEXT to FILE (a volume's contents, say), then exit 0
//	smoke cat FILE     print FILE
//
// Failures exit 1 with the reason on standard error.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "smoke: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	host, _ := os.Hostname()
	if len(args) == 0 {
		return fmt.Errorf("usage: smoke hello | serve | sleep | lookup NAME | get URL | tlsget URL CAFILE | write FILE TEXT | cat FILE")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // bounds lookup, get and tlsget
	defer cancel()
	switch args[0] {
	case "hello":
		fmt.Printf("kubeharness smoke: hello from %s\n", host)
		return nil
	case "serve":
		fmt.Printf("kubeharness smoke: serving on :8080 as %s\n", host)
		return http.ListenAndServe(":8080", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprintf(w, "kubeharness smoke from %s\n", host)
		}))
	case "sleep":
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
		<-sig
		return nil
	case "write":
		if len(args) != 3 {
			return fmt.Errorf("usage: smoke write FILE TEXT")
		}
		if err := os.WriteFile(args[1], []byte(args[2]), 0o644); err != nil {
			return err
		}
		fmt.Printf("kubeharness smoke: wrote %d bytes to %s on %s\n", len(args[2]), args[1], host)
		return nil
	case "cat":
		if len(args) != 2 {
			return fmt.Errorf("usage: smoke cat FILE")
		}
		data, err := os.ReadFile(args[1])
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	case "lookup":
		if len(args) != 2 {
			return fmt.Errorf("lookup takes one name")
		}
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[1])
		if err != nil {
			return err
		}
		fmt.Printf("%s has addresses %s\n", args[1], strings.Join(addrs, " "))
		return nil
	case "tlsget":
		if len(args) != 3 {
			return fmt.Errorf("tlsget takes a URL and a CA file")
		}
		ca, err := os.ReadFile(args[2])
		if err != nil {
			return err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) {
			return fmt.Errorf("%s holds no PEM certificate", args[2])
		}
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[1], nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		peer := resp.TLS.PeerCertificates[0]
		fmt.Printf("verified %s: serial %s, DNS names %s, HTTP %s\n", req.URL.Host, peer.SerialNumber.Text(16), strings.Join(peer.DNSNames, ","), resp.Status)
		return nil
	case "get":
		if len(args) != 2 {
			return fmt.Errorf("get takes one URL")
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[1], nil)
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s: %s", args[1], resp.Status, body)
		}
		fmt.Printf("GET %s from %s: %s", args[1], host, body)
		return nil
	}
	return fmt.Errorf("unknown mode %q: want hello, serve, sleep, lookup, get or tlsget", args[0])
}
