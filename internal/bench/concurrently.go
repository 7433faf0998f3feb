package bench

import "golang.org/x/sync/errgroup"

// concurrently calls create(i) for each i in [0, n) from at most workers
// goroutines at once, as a burst of clients would, and returns the first
// error once every call has returned.
func concurrently(n, workers int, create func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(workers)
	for i := range n {
		g.Go(func() error { return create(i) })
	}
	return g.Wait()
}
