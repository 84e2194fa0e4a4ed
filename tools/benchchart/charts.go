package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// chart is one PNG: lines of a benchmark's results against one of its
// key=value parameters, on a logarithmic x axis.
type chart struct {
	file          string // under the output directory
	title, xlabel string
	ylabel        string
	bench         string  // the benchmark, e.g. BenchmarkScaleWaiters
	x             string  // the parameter on the x axis, e.g. waiters
	base          float64 // of the x axis' ticks: 2 or 10
	// units are the y values: with one unit, a line per library (the name's
	// part that is not a parameter); with several, a line per unit.
	units  []string
	labels []string // the legend of each unit, when there are several
}

// charts are the scaling curves of bench/bench_test.go's Scale benchmarks.
var charts = []chart{
	{
		file:  "goroutines.png",
		title: "Throughput vs goroutines, each on its own lock (loopback)", xlabel: "goroutines",
		ylabel: "acquire+release per second", bench: "BenchmarkScaleGoroutines", x: "goroutines", base: 2,
		units: []string{"ops/s"},
	},
	{
		file:  "waiters-latency.png",
		title: "leasehold: wake-up latency vs waiters on one connection", xlabel: "waiters",
		ylabel: "release to waiter holding (µs)", bench: "BenchmarkScaleWaiters", x: "waiters", base: 10,
		units: []string{"p50-µs", "p99-µs"}, labels: []string{"p50", "p99"},
	},
	{
		file:  "waiters-memory.png",
		title: "leasehold: memory per waiter vs waiters on one connection", xlabel: "waiters",
		ylabel: "bytes per waiter", bench: "BenchmarkScaleWaiters", x: "waiters", base: 10,
		units: []string{"heapB/waiter", "stackB/waiter"}, labels: []string{"heap", "goroutine stack"},
	},
	{
		file:  "keeper-cpu.png",
		title: "leasehold: CPU per renewal tick vs held leases", xlabel: "held leases",
		ylabel: "CPU ms per tick", bench: "BenchmarkScaleRenewal", x: "leases", base: 10,
		units:  []string{"cpu-ms/tick", "redis-cpu-ms/tick"},
		labels: []string{"client (keeper and rueidis)", "redis-server"},
	},
	{
		file:  "keeper-roundtrips.png",
		title: "leasehold: round trips per renewal tick vs held leases", xlabel: "held leases",
		ylabel: "round trips per tick", bench: "BenchmarkScaleRenewal", x: "leases", base: 10,
		units: []string{"roundtrips/tick"},
	},
}

// line is one named series of a chart, its points in order of x.
type line struct {
	label string
	pts   plotter.XYs
}

// lines gathers c's series from rs: the median of each benchmark's runs.
func (c chart) lines(rs *Results) []line {
	var out []line
	add := func(label string, x, y float64) {
		i := slices.IndexFunc(out, func(l line) bool { return l.label == label })
		if i < 0 {
			out = append(out, line{label: label})
			i = len(out) - 1
		}
		out[i].pts = append(out[i].pts, plotter.XY{X: x, Y: y})
	}
	for _, s := range rs.Under(c.bench) {
		x, err := strconv.ParseFloat(s.Params[c.x], 64)
		if err != nil || x <= 0 {
			continue
		}
		for i, unit := range c.units {
			y, ok := rs.Median(s.Name, unit)
			if !ok {
				continue
			}
			label := s.Rest
			if len(c.units) > 1 {
				label = c.labels[i]
			}
			add(label, x, y)
		}
	}
	for _, l := range out {
		slices.SortFunc(l.pts, func(a, b plotter.XY) int { return cmpFloat(a.X, b.X) })
	}
	return out
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// draw writes c into dir. It reports false, writing nothing, when rs has
// no results for it.
func (c chart) draw(rs *Results, dir string) (bool, error) {
	lines := c.lines(rs)
	if len(lines) == 0 {
		return false, nil
	}
	p := plot.New()
	p.Title.Text = c.title
	p.X.Label.Text = c.xlabel
	p.Y.Label.Text = c.ylabel
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = powers(c.base)
	p.Y.Tick.Marker = plot.TickerFunc(func(min, max float64) []plot.Tick {
		ts := plot.DefaultTicks{}.Ticks(min, max)
		for i := range ts {
			if ts[i].Label != "" {
				ts[i].Label = short(ts[i].Value)
			}
		}
		return ts
	})
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	for i, l := range lines {
		lp, pts, err := plotter.NewLinePoints(l.pts)
		if err != nil {
			return false, fmt.Errorf("%s: %s: %w", c.file, l.label, err)
		}
		lp.Color = plotutil.Color(i)
		lp.Width = vg.Points(1.5)
		pts.Color = plotutil.Color(i)
		pts.Shape = plotutil.Shape(i)
		p.Add(lp, pts)
		p.Legend.Add(l.label, lp, pts)
	}
	p.Y.Min = 0
	p.Y.Max *= 1.15 // room for the legend
	p.X.Min /= 1.2  // and for the first and last tick labels
	p.X.Max *= 1.2
	p.Legend.XOffs = vg.Points(12)
	if err := save(p, filepath.Join(dir, c.file)); err != nil {
		return false, fmt.Errorf("%s: %w", c.file, err)
	}
	return true, nil
}

// save writes p as a PNG of 18x11cm at 150 dpi, sharp on a docs page.
func save(p *plot.Plot, file string) error {
	img := vgimg.NewWith(vgimg.UseWH(18*vg.Centimeter, 11*vg.Centimeter), vgimg.UseDPI(150))
	p.Draw(draw.New(img))
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// powers ticks a logarithmic axis at the powers of base.
func powers(base float64) plot.Ticker {
	return plot.TickerFunc(func(min, max float64) []plot.Tick {
		var ts []plot.Tick
		for v := 1.0; v <= max*1.0001; v *= base {
			if v >= min/1.0001 {
				ts = append(ts, plot.Tick{Value: v, Label: short(v)})
			}
		}
		return ts
	})
}

// short formats v with a k or M suffix: 1000 is 1k, 55300 is 55.3k.
func short(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(math.Round(v/1e5)/10, 'f', -1, 64) + "M"
	case a >= 1e3:
		return strconv.FormatFloat(math.Round(v/1e2)/10, 'f', -1, 64) + "k"
	}
	return strconv.FormatFloat(math.Round(v*1e3)/1e3, 'f', -1, 64)
}
