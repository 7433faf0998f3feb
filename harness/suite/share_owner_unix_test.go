//go:build unix

package suite_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeharness/kubeharness/harness/internal/proctest"
	"github.com/kubeharness/kubeharness/harness/suite"
)

// Another user who read a handle off Ginkgo's parallel server can plant a
// look-alike that carries its token, with the very modes ShareFile uses,
// and name it in a handle of their own. Modes alone do not tell it from
// ShareFile's: the owner does. This matters most where the suite runs as
// root, which may open any user's 0600 file.
func TestReadSharedRefusesAFileOfAnotherUser(t *testing.T) {
	uid, gid := proctest.OtherUser(t)
	token, _ := handleFields(share(t, t.TempDir()))
	for _, tc := range []struct {
		name            string
		dirOther, other bool
	}{
		{"the directory and the file are another user's", true, true},
		{"the file in this user's directory is another user's", false, true},
		{"the directory holding this user's file is another user's", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "kubeharness-shared-planted")
			mkdir(t, dir, 0o700)
			path := filepath.Join(dir, "kubeconfig")
			writeFile(t, path, append([]byte("kubeharness-share/v1 "+token+"\n"), kubeconfigFor(t, realServer)...), 0o600)
			if tc.other {
				if err := os.Chown(path, uid, gid); err != nil {
					t.Fatal(err)
				}
			}
			if tc.dirOther {
				if err := os.Chown(dir, uid, gid); err != nil {
					t.Fatal(err)
				}
			}
			handle := "kubeharness-share/v1 " + token + " " + path
			data, err := suite.ReadShared(handle)
			if err == nil {
				t.Fatalf("ReadShared read another user's look-alike (%d bytes), want a refusal", len(data))
			}
			if !strings.Contains(err.Error(), "owner uid") {
				t.Errorf("ReadShared: %v, want a refusal naming the owner", err)
			}
		})
	}
}
