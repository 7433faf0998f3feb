package binaries

import (
	"flag"
	"os"
	"runtime"
	"testing"
)

func TestMain(m *testing.M) {
	if runtime.GOOS == "windows" {
		// The store provides nothing on Windows (ErrNeedsUnix), and the
		// tests' fake binaries are shell scripts: there only
		// TestUseNeedsUnixOnWindows runs.
		flag.Parse()
		if err := flag.Set("test.run", "^TestUseNeedsUnixOnWindows$"); err != nil {
			panic(err)
		}
	}
	runHelper()
	os.Exit(m.Run())
}
