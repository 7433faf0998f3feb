package cli

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/spf13/cobra"
)

// TestParseArgs: flags may come anywhere among the arguments, which keep
// their order; "--" ends the flags; an unknown flag is a usage error.
func TestParseArgs(t *testing.T) {
	cases := []struct {
		name       string
		args       []string
		positional []string
		printDir   bool
		version    string
		usage      bool
	}{
		{name: "flags only", args: []string{"--print-dir", "--version", "1.37"}, printDir: true, version: "1.37"},
		{name: "flag after the argument", args: []string{"1.37", "--print-dir"}, positional: []string{"1.37"}, printDir: true},
		{name: "flags around the argument", args: []string{"--version=1.37", "1.37", "--print-dir"}, positional: []string{"1.37"}, printDir: true, version: "1.37"},
		{name: "extra arguments kept in order", args: []string{"1.37", "extra", "--print-dir", "more"}, positional: []string{"1.37", "extra", "more"}, printDir: true},
		{name: "double dash ends the flags", args: []string{"--print-dir", "--", "--version"}, positional: []string{"--version"}, printDir: true},
		{name: "unknown flag after the argument", args: []string{"1.37", "--bogus"}, usage: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var (
				got            []string
				printDir       bool
				version        string
				stdout, stderr bytes.Buffer
			)
			root := NewRoot("kubeharness", "", "")
			cmd := &cobra.Command{Use: "test", Args: cobra.ArbitraryArgs, RunE: func(_ *cobra.Command, args []string) error {
				got = args
				return nil
			}}
			cmd.Flags().BoolVar(&printDir, "print-dir", false, "")
			cmd.Flags().StringVar(&version, "version", "", "")
			root.AddCommand(cmd)
			Finish(root)
			code := Execute(context.Background(), root, append([]string{"test"}, tc.args...), &stdout, &stderr)
			if tc.usage {
				if code != ExitUsage || !strings.Contains(stderr.String(), "Run 'kubeharness test --help' for usage.") {
					t.Fatalf("exit status %d, stderr %q; want a usage error", code, stderr.String())
				}
				return
			}
			if code != ExitOK {
				t.Fatalf("exit status %d: %s", code, stderr.String())
			}
			if !slices.Equal(got, tc.positional) || printDir != tc.printDir || version != tc.version {
				t.Errorf("test %q: arguments %q, print-dir %v, version %q; want %q, %v, %q", tc.args, got, printDir, version, tc.positional, tc.printDir, tc.version)
			}
		})
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{&usageError{errors.New("unexpected arguments")}, 2},
		{fmt.Errorf("bins: %w", &usageError{errors.New("unexpected arguments")}), 2},
		{errors.New("build failed"), 1},
	} {
		var stderr bytes.Buffer
		if got := exitCode(&stderr, "kubeharness test", tc.err); got != tc.want {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
		if tc.want != 0 && !strings.HasPrefix(stderr.String(), "kubeharness test: "+tc.err.Error()+"\n") {
			t.Errorf("exitCode(%v) printed %q, want the error after the command", tc.err, stderr.String())
		}
		if hint := strings.Contains(stderr.String(), "Run 'kubeharness test --help' for usage."); hint != (tc.want == 2) {
			t.Errorf("exitCode(%v) printed %q: the --help hint is for usage errors alone", tc.err, stderr.String())
		}
	}
}

// cliTimeout bounds how long a test waits for a kubeharness it started
// that should end at once: one that does not is killed, and the test
// fails rather than hangs.
const cliTimeout = 30 * time.Second

// startCLI starts this test binary as a kubeharness (an init hook that env
// selects) with stdin as standard input.
func startCLI(t *testing.T, ctx context.Context, stdin io.Reader, env []string, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, self, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdin = stdin
	return cmd
}

// stuckReadEnv makes this test binary a kubeharness whose only command,
// stuck, reads standard input as report and shard read their files
// (untilInterrupted), after printing "reading": a read that does not
// return, for TestSignalEndsAStuckRead.
const stuckReadEnv = "KUBEHARNESS_TEST_STUCK_READ"

func init() {
	if os.Getenv(stuckReadEnv) != "1" {
		return
	}
	os.Exit(RunUntilSignal(func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		root := NewRoot("kubeharness", "", "")
		root.AddCommand(&cobra.Command{Use: "stuck", RunE: func(cmd *cobra.Command, _ []string) error {
			return UntilInterrupted(cmd.Context(), func() error {
				fmt.Fprintln(stdout, "reading")
				_, err := io.ReadAll(os.Stdin)
				return err
			})
		}})
		return Execute(ctx, root, args, stdout, stderr)
	}, []string{"stuck"}, os.Stdout, os.Stderr))
}

// TestSignalEndsAStuckRead: SIGINT or SIGTERM ends a kubeharness command
// whose read does not return (a pipe no one writes or closes), at once,
// with exit status 130 or 143 and a message saying why.
func TestSignalEndsAStuckRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no SIGINT or SIGTERM to send on Windows")
	}
	for _, tc := range []struct {
		sig  syscall.Signal
		name string
		code int
	}{{syscall.SIGINT, "SIGINT", 130}, {syscall.SIGTERM, "SIGTERM", 143}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
			defer cancel()
			// Standard input: a pipe this test holds open and never writes.
			stdin, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			defer stdin.Close()
			cmd := startCLI(t, ctx, stdin, []string{stuckReadEnv + "=1"})
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "reading\n" {
				t.Fatalf("first line %q (%v), want reading", line, err)
			}
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			if ctx.Err() != nil {
				t.Fatalf("kubeharness still ran %s after %s", cliTimeout, tc.name)
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != tc.code {
				t.Errorf("kubeharness ended with %v, want exit status %d", err, tc.code)
			}
			for _, want := range []string{"kubeharness: " + tc.name + ": stopping", "kubeharness stuck: stopped by " + tc.name} {
				if !strings.Contains(stderr.String(), want) {
					t.Errorf("standard error lacks %q:\n%s", want, stderr.String())
				}
			}
		})
	}
}
