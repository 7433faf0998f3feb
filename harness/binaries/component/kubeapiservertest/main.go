//go:build ignore

// Command kube-apiserver-test is kube-apiserver for test control planes:
// the server of k8s.io/kubernetes/cmd/kube-apiserver/app, started as
// kube-apiserver starts it, except that the OpenAPI documents of the
// built-in APIs (/openapi/v2 and /openapi/v3) are built on their first
// request instead of before the server serves. Building them is about
// half of a tuned start's CPU time, and most test runs never ask for them;
// those that do (kubectl explain, kubectl apply's field validation check)
// get the same documents, built once, on first use.
//
// kubeharness builds this file in a copy of kube-apiserver's build module
// (harness/binaries: KubeAPIServerTest); it is written against the app
// package of Kubernetes 1.37.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	_ "time/tzdata" // for timeZone support in CronJob

	restful "github.com/emicklei/go-restful/v3"
	"github.com/spf13/cobra"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/routes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/component-base/cli"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register"          // for JSON log format registration
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // load all the prometheus client-go plugins
	_ "k8s.io/component-base/metrics/prometheus/version"  // for version metric registration
	"k8s.io/component-base/term"
	utilversion "k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

func main() {
	os.Exit(cli.Run(newAPIServerCommand()))
}

// newAPIServerCommand is app.NewAPIServerCommand, running run instead of
// app.Run.
func newAPIServerCommand() *cobra.Command {
	s := options.NewServerRunOptions()
	ctx := genericapiserver.SetupSignalContext()
	featureGate := s.GenericServerRunOptions.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)

	cmd := &cobra.Command{
		Use: "kube-apiserver",
		Long: `The Kubernetes API server for test control planes: kube-apiserver,
with the OpenAPI documents of the built-in APIs built on first request.`,
		SilenceUsage: true,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			if err := s.GenericServerRunOptions.ComponentGlobalsRegistry.Set(); err != nil {
				return err
			}
			rest.SetDefaultWarningHandler(rest.NoWarnings{})
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			verflag.PrintAndExitIfRequested()
			fs := cmd.Flags()
			if err := logsapi.ValidateAndApply(s.Logs, featureGate); err != nil {
				return err
			}
			cliflag.PrintFlags(fs)
			completedOptions, err := s.Complete(ctx)
			if err != nil {
				return err
			}
			if errs := completedOptions.Validate(); len(errs) != 0 {
				return utilerrors.NewAggregate(errs)
			}
			featureGate.(featuregate.MutableFeatureGate).AddMetrics()
			s.GenericServerRunOptions.ComponentGlobalsRegistry.AddMetrics()
			return run(ctx, completedOptions)
		},
		Args: func(cmd *cobra.Command, args []string) error {
			for _, arg := range args {
				if len(arg) > 0 {
					return fmt.Errorf("%q does not take any arguments, got %q", cmd.CommandPath(), args)
				}
			}
			return nil
		},
	}
	cmd.SetContext(ctx)

	fs := cmd.Flags()
	namedFlagSets := s.Flags()
	s.Flagz = flagz.NamedFlagSetsReader{FlagSets: namedFlagSets}
	verflag.AddFlags(namedFlagSets.FlagSet("global"))
	globalflag.AddGlobalFlags(namedFlagSets.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	for _, f := range namedFlagSets.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, namedFlagSets, cols)
	return cmd
}

// run is app.Run with the built-in APIs' OpenAPI documents installed
// lazily: the kube-apiserver server of the chain (between the aggregator
// and the CRD server) skips the eager installation, and lazyOpenAPI
// installs handlers in its place before the chain is prepared. The CRD
// server's and the aggregator's own documents are built as kube-apiserver
// builds them; the aggregator merges them with these on request.
func run(ctx context.Context, opts options.CompletedOptions) error {
	klog.Infof("Version: %+v", utilversion.Get())
	klog.InfoS("Golang settings", "GOGC", os.Getenv("GOGC"), "GOMAXPROCS", os.Getenv("GOMAXPROCS"), "GOTRACEBACK", os.Getenv("GOTRACEBACK"))

	if opts.InformerName == nil {
		informerName, err := cache.NewInformerName("kube-apiserver")
		if err != nil {
			return err
		}
		opts.InformerName = informerName
	}
	config, err := app.NewConfig(opts)
	if err != nil {
		return err
	}
	generic := config.KubeAPIs.ControlPlane.Generic
	generic.SkipOpenAPIInstallation = true
	completed, err := config.Complete()
	if err != nil {
		return err
	}
	server, err := app.CreateServerChain(completed)
	if err != nil {
		return err
	}
	kube, ok := server.GenericAPIServer.NextDelegate().(*genericapiserver.GenericAPIServer)
	if !ok {
		return fmt.Errorf("the aggregator's delegate is a %T, not the kube-apiserver server", server.GenericAPIServer.NextDelegate())
	}
	lazyOpenAPI(kube.Handler.GoRestfulContainer, kube.Handler.NonGoRestfulMux, generic)
	prepared, err := server.PrepareRun()
	if err != nil {
		return err
	}
	return prepared.Run(ctx)
}

// lazyOpenAPI serves /openapi/v2 and /openapi/v3 for the routes of c on m,
// each document built by routes.OpenAPI, as the eager installation builds
// it, on its first request.
//
// The v3 discovery document (/openapi/v3) names every group version with a
// hash query that clients use as a cache key. The eager installation hashes
// each built document; here the hash is of the binary's version and the
// routes the documents are built from, which determine them, so that
// listing them builds none (the aggregator reads this list while the
// server is prepared). A group version's document is served whatever hash
// the request names, with its own content's ETag.
func lazyOpenAPI(c *restful.Container, m *mux.PathRecorderMux, cfg *genericapiserver.Config) {
	m.Handle("/openapi/v2", &lazyHandler{install: func(sub *mux.PathRecorderMux) {
		routes.OpenAPI{Config: cfg.OpenAPIConfig}.InstallV2(c, sub)
	}})

	// One document per web service root path, the last web service of a
	// path winning, as routes.OpenAPI.InstallV3 groups them.
	groupVersions := map[string]*lazyHandler{}
	var names []string
	for _, ws := range c.RegisteredWebServices() {
		gv := strings.TrimPrefix(ws.RootPath(), "/")
		if _, seen := groupVersions[gv]; !seen {
			names = append(names, gv)
		}
		groupVersions[gv] = &lazyHandler{install: func(sub *mux.PathRecorderMux) {
			one := restful.NewContainer()
			one.Add(ws)
			routes.OpenAPI{V3Config: cfg.OpenAPIV3Config}.InstallV3(one, sub)
		}}
	}
	hash := routesHash(c)
	paths := map[string]map[string]string{}
	for _, gv := range names {
		paths[gv] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gv + "?hash=" + hash}
	}
	discovery, err := json.Marshal(map[string]any{"paths": paths})
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	m.Handle("/openapi/v3", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Etag", strconv.Quote(hash))
		_, _ = w.Write(discovery)
	}))
	m.HandlePrefix("/openapi/v3/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := groupVersions[strings.TrimPrefix(r.URL.Path, "/openapi/v3/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		// The document's own handler redirects a request whose hash is not
		// its content's; the hash discovery named is the routes'.
		r = r.Clone(r.Context())
		q := r.URL.Query()
		q.Del("hash")
		r.URL.RawQuery = q.Encode()
		h.ServeHTTP(w, r)
	}))
}

// lazyHandler installs OpenAPI handlers on a mux of its own on its first
// request, and serves every request from that mux.
type lazyHandler struct {
	install func(sub *mux.PathRecorderMux)
	once    sync.Once
	sub     *mux.PathRecorderMux
}

func (h *lazyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.once.Do(func() {
		h.sub = mux.NewPathRecorderMux("lazy-openapi")
		h.install(h.sub)
	})
	h.sub.ServeHTTP(w, r)
}

// routesHash identifies the OpenAPI documents the routes of c make in this
// binary: the binary's version and every route's method, path and
// operation, hashed with 64-bit FNV-1a.
func routesHash(c *restful.Container) string {
	const prime = 1099511628211
	sum := uint64(14695981039346656037)
	add := func(s string) {
		for i := 0; i < len(s); i++ {
			sum = (sum ^ uint64(s[i])) * prime
		}
		sum = (sum ^ '\n') * prime
	}
	add(utilversion.Get().String())
	for _, ws := range c.RegisteredWebServices() {
		for _, r := range ws.Routes() {
			add(r.Method + " " + r.Path + " " + r.Operation)
		}
	}
	return fmt.Sprintf("%016X", sum)
}
