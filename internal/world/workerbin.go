package world

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/forkbomb/forkbomb/internal/world/workerproc"
)

// WorkerName is the slim worker's file name beside forkbomb (cmd/forkbomb-world).
const WorkerName = workerproc.Name

// workerBin is the slim worker, looked at once per process (slimWorker). The Runner uses it
// when it can show that it runs the world code of this build; else — no such file, a refused
// one, one of another build (it says so and exits, having run nothing) — this binary serves
// as its own worker, for the rest of the process, and says why once on stderr.
type workerBin struct {
	slim *workerproc.Slim
	// refusal, once set, is why it is not used (it never is again).
	refusal atomic.Pointer[string]
	warn    sync.Once
}

// usable reports whether workers should be started from b.
func (b *workerBin) usable() bool {
	return b != nil && b.slim.File != nil && b.refusal.Load() == nil
}

// exe is the path that executes b's checked file (workerproc.Slim.Exe).
func (b *workerBin) exe() string { return b.slim.Exe() }

// refuse records why b is not used, for the rest of the process, and warns once.
func (b *workerBin) refuse(why string) {
	if b == nil {
		return
	}
	why = strings.TrimPrefix(why, "forkbomb world worker: ")
	b.refusal.CompareAndSwap(nil, &why)
	b.warn.Do(func() {
		fmt.Fprintf(os.Stderr, "forkbomb: warning: world worker %s not used: %s; forkbomb serves as its own worker, which starts slower. "+
			"Rebuild them together (CGO_ENABLED=0 go build -o bin/ ./cmd/...) and keep %s a plain file, mode 0755, beside forkbomb\n",
			b.slim.Path, *b.refusal.Load(), WorkerName)
	})
}
