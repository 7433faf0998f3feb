// Package envtest is a drop-in for controller-runtime's envtest package
// (sigs.k8s.io/controller-runtime/pkg/envtest) that starts the harness's
// tuned control plane: change the import line of a kubebuilder-scaffolded
// suite_test.go to
//
//	"github.com/kubeharness/kubeharness/harness/envtest"
//
// and the suite compiles and runs unchanged, on a control plane that
// starts in about 1.5 s instead of about 4 s (2 cores).
//
// Environment has exactly controller-runtime's fields (it is the same
// struct type), and its Start, Stop and AddUser keep their contracts. What
// differs is underneath:
//   - etcd starts from a data directory that one API server of the same
//     binaries and flags has bootstrapped already (made once: by
//     `kubeharness bins use` beside the binaries, so that a CI cache of the
//     binaries' directory holds it, or else by the first start, kept in the
//     user's cache directory), copied to tmpfs, without fsync and with a
//     millisecond single-member election;
//   - kube-apiserver runs with controller-runtime's envtest flags plus
//     those the suite configured (ControlPlane.APIServer.Configure()), and
//     without priority and fairness or the endpoint reconciler; readiness
//     skips the two bootstrap hooks the template has already satisfied;
//   - users (AddUser, and the admin Start provisions) get client
//     certificates from the control plane's CA.
//
// CRDs and webhooks are installed by controller-runtime's own code
// (InstallCRDs, WebhookInstallOptions.Install), as on an existing cluster,
// but the CRDs are there already: etcd's data comes from a template that
// holds the suite's CRDs established, kept under a name that covers their
// content, so the install finds each in place and discovery serving, and
// its updates that would change nothing are answered without the API
// server. The first start with those CRDs makes that template on its own
// plane, with no start of its own: it installs them, and copies etcd's
// data once discovery serves them, before the suite writes anything. A
// changed CRD makes a new template. The webhooks' port, when the suite
// leaves it to the install, is picked here, so that controller-runtime
// leaves no reservation file in the user's cache.
// UseExistingCluster, DownloadBinaryAssets and KUBEHARNESS_ENVTEST=stock
// hand the whole Start to controller-runtime, the last two once what it
// would run passes the check below.
//
// Binaries are found where controller-runtime looks for them
// (TEST_ASSET_ETCD and TEST_ASSET_KUBE_APISERVER, KUBEBUILDER_ASSETS,
// BinaryAssetsDirectory, /usr/local/kubebuilder/bin), then in the store
// that `kubeharness bins use` and setup-envtest fill. Missing binaries are
// an error that says what to run. Whichever source named them, they run
// only when no one but this user and root could have changed them: each
// binary, its directory (up to the store's root, for the store) and every
// directory above it up to / must belong to this user or root and be
// writable by no one else (a sticky directory above it, such as /tmp,
// aside); Start refuses anything else before it runs a binary, naming each
// path, what is wrong and the fix.
//
// Systems: on Linux and macOS the control plane's processes die with the
// test process however it dies (harness/process: a parent-death signal on
// Linux, a watchdog on macOS). On Windows Start is controller-runtime's
// own: the tuned control plane needs a Unix system (etcd on unix sockets,
// process groups and signals).
package envtest
