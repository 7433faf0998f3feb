package controlplane

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"
)

// PrepareTemplate makes sure the base etcd template a start of o's
// binaries and flags begins from is beside the binaries
// (TemplatesBeside(o.BinaryDir)), bootstrapping it there with a start and
// stop of its own (a few seconds) when it is missing, and returns its
// directory. Starts look there after Options.TemplateDir and before the
// user's cache, so caching the binaries' directory caches the template,
// and the first start on a fresh CI runner is a tuned one. o.TemplateDir
// is ignored; o.APIServerFlags nil means HarnessAPIServerFlags, as for
// Start. The template gets the trust checks a start gives it, before it is
// used and again when it is found: the binaries' directory already passed
// them (CheckBinaryDir).
//
// ctx is checked before the bootstrap begins. On a system without the
// tuned control plane (Windows) there is nothing to prepare: it returns ""
// and no error.
func PrepareTemplate(ctx context.Context, o Options) (string, error) {
	if noUnix != "" {
		return "", nil
	}
	if o.BinaryDir == "" {
		return "", errors.New("controlplane: PrepareTemplate: Options.BinaryDir is empty")
	}
	abs, err := filepath.Abs(o.BinaryDir)
	if err != nil {
		return "", fmt.Errorf("controlplane: %w", err)
	}
	o.BinaryDir, o.CRDs = abs, nil
	if err := CheckBinaryDir(o.BinaryDir); err != nil {
		return "", err
	}
	if o.APIServerFlags == nil {
		o.APIServerFlags = HarnessAPIServerFlags()
	}
	if o.StartTimeout == 0 {
		o.StartTimeout = 60 * time.Second
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	o.TemplateDir = TemplatesBeside(o.BinaryDir)
	if err := ctx.Err(); err != nil {
		return "", err
	}
	dir, err := ensureTemplate(o.BinaryDir, o)
	if err != nil {
		return "", fmt.Errorf("controlplane: preparing the etcd template beside %s: %w", o.BinaryDir, err)
	}
	return dir, nil
}

// PrepareTemplates prepares (PrepareTemplate) the two base templates
// starts from binaryDir use: harness/envtest's (EnvtestAPIServerFlags)
// and Start's default (HarnessAPIServerFlags), and returns their
// directories. `kubeharness bins use` calls it for the binaries it
// provides or finds. A template that cannot be made costs a first start
// its speed, nothing else: callers may report the error as a warning.
func PrepareTemplates(ctx context.Context, binaryDir string) ([]string, error) {
	var dirs []string
	for _, flags := range [][]string{EnvtestAPIServerFlags(), HarnessAPIServerFlags()} {
		dir, err := PrepareTemplate(ctx, Options{BinaryDir: binaryDir, APIServerFlags: flags})
		if err != nil {
			return dirs, err
		}
		if dir != "" {
			dirs = append(dirs, dir)
		}
	}
	return dirs, nil
}
