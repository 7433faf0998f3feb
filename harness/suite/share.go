package suite

import (
	"bytes"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/onsi/ginkgo/v2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// What crosses from Ginkgo's first process to the others is a handle,
//
//	kubeharness-share/v1 <token> <path>
//
// where path names the file ShareFile wrote in the directory it made for
// this run (kubeharness-shared-*, mode 0700) and token is 32 random bytes,
// in hex, that the file's first line repeats. Ginkgo's parallel server
// listens on loopback and any user of the machine can talk to it, so the
// handle may come from someone else: ReadShared reads a file only when
// the directory and the file are this user's and private, reached
// without following a symbolic link, and the file carries the token.
//
// Anyone can also read a handle off one run's server and send it to
// another run's (of the same user: the file must be theirs) before that
// run's first process does, which would point the second run's processes
// at the first run's cluster. So the file's second line names the Ginkgo
// run it was written for (thisRun), and ReadShared refuses a file of
// another run. Nobody else can write that line: the file is this user's
// and private.
const (
	// shareVersion starts a handle and the first line of a shared file.
	shareVersion = "kubeharness-share/v1"
	// shareDirPrefix starts the name of the directory ShareFile makes.
	shareDirPrefix = "kubeharness-shared-"
	// tokenBytes is the length of the token before hex encoding.
	tokenBytes = 32
)

// Share is for the first function of Ginkgo's SynchronizedBeforeSuite, in
// the process that started the control plane: it writes cfg's connection
// (the API server's address and CA, the client's credentials) to a
// kubeconfig with ShareFile and returns ShareFile's handle, which is all
// that crosses to the other processes. The directory is removed when the
// suite ends (DeferCleanup in SynchronizedBeforeSuite runs on this process
// after every other has finished).
func Share(cfg *rest.Config) ([]byte, error) {
	data, err := kubeconfig(cfg)
	if err != nil {
		return nil, err
	}
	shared, remove, err := ShareFile("kubeconfig", data)
	if err != nil {
		return nil, err
	}
	ginkgo.DeferCleanup(remove)
	return []byte(shared), nil
}

// Connect is for the second function of SynchronizedBeforeSuite, on every
// process: it reads the kubeconfig whose handle Share returned
// (ReadShared).
func Connect(shared []byte) (*rest.Config, error) {
	data, err := ReadShared(string(shared))
	if err != nil {
		return nil, err
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, fmt.Errorf("suite: the kubeconfig Ginkgo's first process shared: %w", err)
	}
	return cfg, nil
}

// ShareFile writes data, which may hold credentials, to a file name of
// mode 0600 in a new directory of mode 0700 and returns the handle the
// other processes read it by (ReadShared), and a function that removes
// both. The handle names the file and carries a random token the file
// repeats; it holds nothing of data. The file also names the Ginkgo run it
// was written in, and ReadShared reads it in that run only. Suites that
// hand over more than a rest.Config use it with ReadShared.
func ShareFile(name string, data []byte) (shared string, remove func() error, err error) {
	if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
		return "", nil, fmt.Errorf("suite: ShareFile needs a file name, not %q", name)
	}
	raw := make([]byte, tokenBytes)
	if _, err := rand.Read(raw); err != nil {
		return "", nil, fmt.Errorf("suite: sharing with the other Ginkgo processes: %w", err)
	}
	token := hex.EncodeToString(raw)
	path, remove, err := writeShared(name, append([]byte(header(token)+runLine(thisRun())), data...))
	if err != nil {
		return "", nil, fmt.Errorf("suite: sharing with the other Ginkgo processes: %w", err)
	}
	return shareVersion + " " + token + " " + path, remove, nil
}

// ReadShared reads the file whose handle ShareFile returned. It refuses,
// saying why, a bare path or anything else ShareFile does not return; a
// path with a symbolic link in it; a directory or file that is not this
// user's, or that others could read or write (the directory must have mode
// 0700, the file 0600); a file whose first line does not carry the
// handle's token; and a file ShareFile wrote in another Ginkgo run. The
// processes of one `ginkgo -p` run have its parallel server and its ginkgo
// process, their parent, in common: each reads what any of them shared,
// and no process of another run does. In a run without parallel processes
// nothing crosses a server, and only the process that shared a file reads
// it. It checks what it opened, not the path, so the path cannot be
// changed between the checks and the read.
func ReadShared(shared string) ([]byte, error) {
	token, path, err := parseHandle(shared)
	if err != nil {
		return nil, err
	}
	content, err := readPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("suite: reading what Ginkgo's first process shared: %w", err)
	}
	want := []byte(header(token))
	if len(content) < len(want) || subtle.ConstantTimeCompare(content[:len(want)], want) != 1 {
		return nil, fmt.Errorf("suite: %s is not the file ShareFile wrote for the handle Ginkgo's first process sent: it does not carry the handle's token", path)
	}
	line, data, ok := bytes.Cut(content[len(want):], []byte("\n"))
	run, err := parseRunLine(string(line))
	if !ok || err != nil {
		return nil, fmt.Errorf("suite: %s does not name the Ginkgo run it was written for on its second line, as ShareFile writes it: share it again with this version of harness/suite", path)
	}
	if this := thisRun(); run != this {
		return nil, fmt.Errorf("suite: %s was shared in %s, and this is %s: someone on this machine may have sent another run's handle to this run's parallel server, which anyone can talk to; a process reads only what its own run shared with Share or ShareFile", path, run, this)
	}
	return data, nil
}

// header is the first line of a shared file.
func header(token string) string {
	return shareVersion + " " + token + "\n"
}

// runLine is the second line of a shared file: the run, as thisRun names
// it, that ShareFile wrote it in.
func runLine(run string) string {
	return "run " + strconv.Quote(run) + "\n"
}

// parseRunLine reads the run from the second line of a shared file,
// without its newline.
func parseRunLine(line string) (string, error) {
	q, ok := strings.CutPrefix(line, "run ")
	if !ok {
		return "", errors.New("no run")
	}
	return strconv.Unquote(q)
}

// thisRun names the Ginkgo run this process is one of. Parallel processes
// are started by the ginkgo command (ginkgo v2 execs each process's test
// binary itself, so it is each one's parent) with the address of the
// parallel server it listens on, a loopback port of its own while it
// runs: both together name the run, and no other run of the machine has
// them at the same time. A process that is not one of several (no
// parallel server) shares nothing through a server, with itself only; it
// names itself.
func thisRun() string {
	cfg, _ := ginkgo.GinkgoConfiguration()
	if cfg.ParallelHost != "" {
		return fmt.Sprintf("the Ginkgo run of ginkgo process %d (parallel server %s)", os.Getppid(), cfg.ParallelHost)
	}
	return fmt.Sprintf("Ginkgo process %d (a run without parallel processes)", os.Getpid())
}

// parseHandle splits what ShareFile returns into its token and path, and
// refuses anything else.
func parseHandle(shared string) (token, path string, err error) {
	fields, ok := strings.CutPrefix(shared, shareVersion+" ")
	if !ok {
		return "", "", fmt.Errorf("suite: Ginkgo's first process sent %s, which is not what Share returns (ShareFile's handle, %q): a bare path is refused, as anyone on this machine can send one to Ginkgo's parallel server", quoteShort(shared), shareVersion+" <token> <path>")
	}
	token, path, _ = strings.Cut(fields, " ")
	if raw, err := hex.DecodeString(token); err != nil || len(raw) != tokenBytes {
		return "", "", fmt.Errorf("suite: the handle Ginkgo's first process sent has no token of %d hex digits: %s", 2*tokenBytes, quoteShort(shared))
	}
	if !filepath.IsAbs(path) || filepath.Clean(path) != path || strings.ContainsAny(path, "\x00\n") {
		return "", "", fmt.Errorf("suite: the handle Ginkgo's first process sent does not name a file by its absolute, clean path: %s", quoteShort(path))
	}
	if !strings.HasPrefix(filepath.Base(filepath.Dir(path)), shareDirPrefix) {
		return "", "", fmt.Errorf("suite: %s is not in a directory ShareFile makes (%s*)", path, shareDirPrefix)
	}
	return token, path, nil
}

// quoteShort quotes s for an error, cut to a readable length.
func quoteShort(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

func kubeconfig(cfg *rest.Config) ([]byte, error) {
	if cfg == nil || cfg.Host == "" {
		return nil, errors.New("suite: Share needs the control plane's rest.Config (its Host is empty)")
	}
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" {
		cfg = rest.CopyConfig(cfg)
		if err := rest.LoadTLSFiles(cfg); err != nil {
			return nil, fmt.Errorf("suite: reading the client's TLS files: %w", err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["suite"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify: cfg.Insecure, TLSServerName: cfg.ServerName}
	kc.AuthInfos["suite"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData,
		Token: cfg.BearerToken, Username: cfg.Username, Password: cfg.Password,
		Impersonate: cfg.Impersonate.UserName, ImpersonateGroups: cfg.Impersonate.Groups}
	kc.Contexts["suite"] = &clientcmdapi.Context{Cluster: "suite", AuthInfo: "suite"}
	kc.CurrentContext = "suite"
	return clientcmd.Write(*kc)
}
