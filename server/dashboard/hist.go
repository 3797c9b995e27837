package dashboard

import (
	"math"
	"time"
)

// Latency histograms use log-scale buckets: four per doubling from 0.1 ms,
// so a reported percentile is within 9% of the true value, and a
// histogram is a fixed 121 counters whatever the traffic. Histograms of
// different seconds add up, which is what a trailing window needs.
const (
	histBase    = 100 * time.Microsecond
	histPerOct  = 4
	histBuckets = 1 + histPerOct*30 // up to 0.1 ms × 2^30 ≈ 30 h
)

type hist struct {
	n      int64
	counts [histBuckets]uint32
}

func (h *hist) reset() { *h = hist{} }

func (h *hist) add(d time.Duration) {
	h.n++
	h.counts[bucketOf(d)]++
}

func (h *hist) merge(o *hist) {
	h.n += o.n
	for i, c := range o.counts {
		h.counts[i] += c
	}
}

func bucketOf(d time.Duration) int {
	if d < histBase {
		return 0
	}
	i := 1 + int(math.Log2(float64(d)/float64(histBase))*histPerOct)
	return min(i, histBuckets-1)
}

// bucketMS is the value a bucket stands for, in milliseconds: the
// geometric middle of its bounds (half the base for the first one).
func bucketMS(i int) float64 {
	base := float64(histBase) / float64(time.Millisecond)
	if i == 0 {
		return base / 2
	}
	return base * math.Exp2((float64(i-1)+0.5)/histPerOct)
}

// quantile returns the q-quantile (0 < q <= 1) in milliseconds, or nil
// when the histogram is empty. Rounded to 3 significant digits: the
// buckets are not finer than that.
func (h *hist) quantile(q float64) *float64 {
	if h.n == 0 {
		return nil
	}
	rank := int64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen int64
	for i, c := range h.counts {
		seen += int64(c)
		if seen >= rank {
			v := round3(bucketMS(i))
			return &v
		}
	}
	v := round3(bucketMS(histBuckets - 1))
	return &v
}

func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	mag := math.Pow(10, 2-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*mag) / mag
}
