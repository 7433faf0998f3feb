package operatortest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
)

// PortForward forwards free local ports on 127.0.0.1 to ports of a Pod
// through the API server, as `kubectl port-forward` does, and returns the
// local addresses in the order of ports. The forward lasts until ctx ends.
func PortForward(ctx context.Context, cfg *rest.Config, namespace, pod string, ports ...int) ([]string, error) {
	transport, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(strings.TrimSuffix(cfg.Host, "/") + fmt.Sprintf("/api/v1/namespaces/%s/pods/%s/portforward", namespace, pod))
	if err != nil {
		return nil, err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, u)
	specs := make([]string, len(ports))
	for i, p := range ports {
		specs[i] = fmt.Sprintf("0:%d", p)
	}
	ready := make(chan struct{})
	stop := make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, specs, stop, ready, io.Discard, io.Discard)
	if err != nil {
		return nil, err
	}
	failed := make(chan error, 1)
	go func() { failed <- fw.ForwardPorts() }()
	go func() {
		<-ctx.Done()
		close(stop)
	}()
	select {
	case <-ready:
	case err := <-failed:
		return nil, fmt.Errorf("port-forward to %s/%s: %w", namespace, pod, err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	forwarded, err := fw.GetPorts()
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(forwarded))
	for i, f := range forwarded {
		addrs[i] = fmt.Sprintf("127.0.0.1:%d", f.Local)
	}
	return addrs, nil
}
