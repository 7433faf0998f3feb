//go:build !unix

package store

import (
	"context"
	"io"
	"os"
	"time"
)

// Lock is a no-op where flock is not had: builders must not run at once.
func Lock(context.Context, string, string, io.Writer) (func(), error) { return func() {}, nil }

// lockPartial is a no-op where flock is not had.
func lockPartial(*os.File) error { return nil }

// staleAfter is how old a partial download must be, where flock is not
// had, to be taken for one a killed run left: no download takes that long.
const staleAfter = 24 * time.Hour

// abandoned reports whether a partial download is older than staleAfter.
func abandoned(_ *os.File, fi os.FileInfo) bool { return time.Since(fi.ModTime()) > staleAfter }
