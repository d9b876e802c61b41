package gateway

import (
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkModelCall measures metered model calls per second and their
// p99 latency through the whole gateway (auth, reserve, forward to the
// scripted upstream, settle), on SQLite and PostgreSQL in the same run.
func BenchmarkModelCall(b *testing.B) {
	for _, kind := range backends {
		b.Run(kind, func(b *testing.B) {
			_, url, _, key := modelGateway(b, kind, 1<<50, Options{Limits: Limits{ModelPerMinute: 1 << 30}})
			var mu sync.Mutex
			var lat []time.Duration
			start := time.Now()
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				var mine []time.Duration
				for pb.Next() {
					t0 := time.Now()
					if code, _ := call(b, url, key, "/v1/messages", anthropicBody); code != 200 {
						b.Errorf("status %d", code)
						return
					}
					mine = append(mine, time.Since(t0))
				}
				mu.Lock()
				lat = append(lat, mine...)
				mu.Unlock()
			})
			b.StopTimer()
			if len(lat) == 0 {
				return
			}
			slices.Sort(lat)
			b.ReportMetric(float64(len(lat))/time.Since(start).Seconds(), "req/s")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
