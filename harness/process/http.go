package process

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// httpPollInterval is how often WaitHTTP asks.
const httpPollInterval = 10 * time.Millisecond

// WaitHTTP asks url with hc until it answers 200 OK, the process exits or
// ctx ends; observe, when set, is shown every answer (its status and up to
// 16 KiB of its body). A process that exits fails the wait at once,
// instead of at ctx's end.
func (p *Process) WaitHTTP(ctx context.Context, hc *http.Client, url string, observe func(status int, body []byte)) error {
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("asking %s: %w", url, err)
		}
		resp, err := hc.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 16384))
			resp.Body.Close()
			if observe != nil {
				observe(resp.StatusCode, body)
			}
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", resp.Status, body)
		}
		last = err
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v); see its output", p.Name(), p.State())
		case <-ctx.Done():
			return fmt.Errorf("%w; last answer: %v", ctx.Err(), last)
		case <-time.After(httpPollInterval):
		}
	}
}
