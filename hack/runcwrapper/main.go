// Command runcwrapper is a runc that drops CAP_SYS_RESOURCE from the
// containers it creates, for hosts whose capability bounding set lacks it
// (there, `docker run --privileged` fails because runc cannot grant it).
// hack/docker-up.sh registers it as the Docker daemon's default runtime
// only on such hosts. It edits the OCI bundle's config.json on create/run
// and the process file on exec, then runs the real runc with the same
// arguments.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"syscall"
)

// dropped is the capability the host cannot grant.
const dropped = "CAP_SYS_RESOURCE"

func main() {
	runc := os.Getenv("KUBEHARNESS_RUNC")
	if runc == "" {
		runc = "/usr/bin/runc"
	}
	if err := rewrite(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "runcwrapper: %v\n", err)
		os.Exit(1)
	}
	if err := syscall.Exec(runc, append([]string{runc}, os.Args[1:]...), os.Environ()); err != nil {
		fmt.Fprintf(os.Stderr, "runcwrapper: running %s: %v\n", runc, err)
		os.Exit(1)
	}
}

// rewrite edits the files the runc command line names.
func rewrite(args []string) error {
	cmd := command(args)
	switch cmd {
	case "create", "run":
		bundle := flagValue(args, "--bundle", "-b")
		if bundle == "" {
			bundle = "."
		}
		return dropFromFile(filepath.Join(bundle, "config.json"), func(doc map[string]any) map[string]any {
			p, _ := doc["process"].(map[string]any)
			return p
		})
	case "exec":
		if p := flagValue(args, "--process", "-p"); p != "" {
			return dropFromFile(p, func(doc map[string]any) map[string]any { return doc })
		}
	}
	return nil
}

// command is the first argument that is not a flag or a flag's value
// (runc's global flags come before it).
func command(args []string) string {
	valued := []string{"--log", "--log-format", "--root", "--criu", "--rootless"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if slices.Contains(valued, a) {
			i++
			continue
		}
		if len(a) > 0 && a[0] != '-' {
			return a
		}
	}
	return ""
}

func flagValue(args []string, long, short string) string {
	for i, a := range args {
		if (a == long || a == short) && i+1 < len(args) {
			return args[i+1]
		}
		for _, f := range []string{long, short} {
			if len(a) > len(f)+1 && a[:len(f)+1] == f+"=" {
				return a[len(f)+1:]
			}
		}
	}
	return ""
}

// dropFromFile removes the capability from every set of the process that
// find returns, keeping everything else in the file as it was.
func dropFromFile(path string, find func(map[string]any) map[string]any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !dropCapability(find(doc)) {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, fi.Mode())
}

// dropCapability removes the capability from the process's capability
// sets and reports whether anything changed.
func dropCapability(process map[string]any) bool {
	caps, _ := process["capabilities"].(map[string]any)
	changed := false
	for set, v := range caps {
		list, ok := v.([]any)
		if !ok {
			continue
		}
		kept := slices.DeleteFunc(slices.Clone(list), func(c any) bool { return c == dropped })
		if len(kept) != len(list) {
			caps[set] = kept
			changed = true
		}
	}
	return changed
}
