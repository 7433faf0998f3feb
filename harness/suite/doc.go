// Package suite lets a Ginkgo suite of any operator project run its
// parallel processes on one control plane, give each spec a namespace of
// its own, and leave a failure bundle for each spec that fails:
//
//	var _ = suite.BundleFailures(suite.Failures{Artifacts: "artifacts",
//		Config: func() *rest.Config { return cfg }})
//
//	var _ = SynchronizedBeforeSuite(func() []byte {
//		cfg, err := testEnv.Start() // harness/envtest, or any other
//		Expect(err).NotTo(HaveOccurred())
//		shared, err := suite.Share(cfg)
//		Expect(err).NotTo(HaveOccurred())
//		return shared
//	}, func(shared []byte) {
//		var err error
//		cfg, err = suite.Connect(shared)
//		Expect(err).NotTo(HaveOccurred())
//	})
//
//	It("...", func(ctx SpecContext) {
//		ns := suite.Namespace(ctx, k8sClient, "publish")
//		...
//	})
//
// Only a handle crosses from the first process to the others: the
// credentials stay in a kubeconfig of mode 0600 in a directory of mode
// 0700, and the handle names that file and carries a random token the
// file repeats. Connect reads nothing else: not a bare path, not a path
// through a symbolic link, not a file without the token, since anyone on
// the machine can talk to Ginkgo's parallel server. examples/noticeboard
// in this repository is a kubebuilder project set up this way.
package suite
