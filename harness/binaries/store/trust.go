package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kubeharness/kubeharness/harness/internal/clihint"
	"github.com/kubeharness/kubeharness/harness/internal/ownership"
)

// Who may write a store decides what the harness runs: version checks run
// every binary found there, and control planes start them. So before
// anything in a store is run or trusted, Check makes sure that only the
// caller and root could have put it there, and Refuse applies the one rule
// of every binary the harness runs (ownership.CheckRun) to what is taken
// from it. Where file modes say nothing of owners and groups (Windows)
// nothing is checked.

// Fix is how to get out of a store others could change.
const Fix = "use a store only you can write: another --bin-dir (`kubeharness bins use VERSION --bin-dir DIR -p path`, and export KUBEBUILDER_ASSETS to the directory it prints)"

// Check refuses the directory dir below the store (a version directory, a
// build module's) when someone other than the caller or root could have
// put what is in it there: each directory from dir up to the bin-dir must
// belong to the caller or root and be writable by no one else, and so must
// each of names in dir that exists (binaries, build module files).
// Directories above the bin-dir are not checked here: the bin-dir is the
// user's choice (Refuse checks them before anything runs).
func (s Store) Check(dir string, names ...string) error {
	root, dir := filepath.Clean(s.Dir), filepath.Clean(dir)
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		chain = append(chain, d)
		if d == root || d == filepath.Dir(d) {
			break
		}
	}
	var problems []error
	look := func(path string, fi os.FileInfo) {
		if err := ownership.CheckPrivate(path, fi); err != nil {
			problems = append(problems, err)
		}
	}
	for i := len(chain) - 1; i >= 0; i-- {
		fi, err := os.Stat(chain[i])
		if err != nil {
			return fmt.Errorf("checking the binaries store %s: %w", root, err)
		}
		look(chain[i], fi)
	}
	for _, name := range names {
		path := filepath.Join(dir, name)
		if fi, err := os.Stat(path); err == nil {
			look(path, fi)
		}
	}
	return refusal("refusing the binaries store "+root, problems)
}

// Refuse refuses the binaries at paths, in the store's directories, by the
// one rule for every binary the harness runs (ownership.CheckRun), with
// every directory up to the bin-dir private without exception; nil when
// they pass.
func (s Store) Refuse(paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	return refusal("refusing the binaries store "+s.Dir, ownership.CheckRun(s.Dir, paths...))
}

// refusal refuses a store for problems (nil without any): what first,
// then each problem, then the fixes: `chmod go-w` what others may write,
// remove what belongs to another user (it is provided again), or use
// another store.
func refusal(what string, problems []error) error {
	var foreign []string
	for _, p := range problems {
		var oe *ownership.Error
		if errors.As(p, &oe) && oe.Owner != "" {
			foreign = append(foreign, oe.Path)
		}
	}
	var fixes []string
	if len(foreign) > 0 {
		fixes = append(fixes, "remove "+strings.Join(foreign, ", ")+" to have the binaries provided again")
	}
	return ownership.Refuse(what, problems, append(fixes, Fix+"; "+clihint.Get())...)
}
