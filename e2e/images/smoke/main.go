// Command smoke is the workload of the kind smoke specs, built in the run
// into a FROM-scratch image so the specs need no registry:
//
//	smoke hello        print a greeting naming this host, then exit 0
//	smoke serve        answer HTTP on :8080 with this host's name
//	smoke lookup NAME  resolve NAME through the Pod's DNS and print the addresses
//	smoke get URL      print the body of an HTTP GET of URL
//
// Failures exit 1 with the reason on standard error.
package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
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
		return fmt.Errorf("usage: smoke hello | serve | lookup NAME | get URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
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
	return fmt.Errorf("unknown mode %q: want hello, serve, lookup or get", args[0])
}
