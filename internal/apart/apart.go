// Package apart runs a deep piece of work on a goroutine of its own. A goroutine's stack
// keeps the size its deepest call needed for as long as the goroutine lives, and a
// stream's relay (httpx.Serve) lives as long as the stream is open: a step much deeper
// than relaying that it takes now and then (checking a tool call, encoding a whole output
// item) would cost every open stream that much more memory for the rest of its life.
package apart

// Run runs f on a goroutine of its own and waits for it to return; a panic of f is raised
// again on the caller's goroutine, as if f had run there. What f writes is the caller's
// to read once Run returns.
func Run(f func()) {
	var p any
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() { p = recover() }()
		f()
	}()
	<-done
	if p != nil {
		panic(p)
	}
}
