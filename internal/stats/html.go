package stats

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/toolshed/toolshed/internal/percent"
)

//go:embed page.html.tmpl
var pageSource string

var page = template.Must(template.New("page").Funcs(template.FuncMap{
	"count":     count,
	"count64":   count64,
	"pct":       percent.Text,
	"ms":        msText,
	"query":     quoteQuery,
	"show":      show,
	"overrides": Overrides,
	"share": func(n, of int) string { // a bar's width, as a CSS percentage
		if of == 0 {
			return "0%"
		}
		return strconv.FormatFloat(100*float64(n)/float64(of), 'f', 1, 64) + "%"
	},
	"lowRank": func() int { return LowRank },
	"plural":  plural,
	"add":     func(a, b int) int { return a + b },
}).Parse(pageSource))

// WriteHTML writes the report as one self-contained web page: inline CSS and SVG charts,
// no script and nothing fetched, so it opens anywhere, offline, and can be mailed around.
// Every headline figure carries a data-metric attribute naming it, for tests and for
// anyone who scrapes the page.
func (r *Report) WriteHTML(w io.Writer) error {
	var b bytes.Buffer
	err := page.Execute(&b, struct {
		*Report
		Window               string
		TimelineSVG          template.HTML
		SearchHist, CallHist template.HTML
		MaxToolCalls         int
	}{
		Report:      r,
		Window:      r.windowText(),
		TimelineSVG: timelineSVG(r.Timeline),
		SearchHist:  histogramSVG(r.SearchLatency, colorFound),
		CallHist:    histogramSVG(r.CallLatency, colorCalls),
		MaxToolCalls: func() int {
			if len(r.TopTools) == 0 {
				return 0
			}
			return r.TopTools[0].Calls
		}(),
	})
	if err != nil {
		return err
	}
	_, err = w.Write(b.Bytes())
	return err
}

// Chart colors: searches (acted on), likely misses, calls.
const (
	colorFound = "#3b6fd8"
	colorMiss  = "#e8a33d"
	colorCalls = "#7a5af5"
	colorGrid  = "#e4e7eb"
	colorText  = "#616e7c"
)

// timelineSVG draws the searches of each bucket as a bar, its likely misses stacked on
// top in amber, with a light grid and a label under every few bars.
func timelineSVG(tl Timeline) template.HTML {
	const w, h, left, right, top, bottom = 1040.0, 220.0, 40.0, 8.0, 12.0, 28.0
	plotW, plotH := w-left-right, h-top-bottom
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="Searches over time">`, w, h, w, h)
	peak := 0
	for _, p := range tl.Points {
		peak = max(peak, p.Searches)
	}
	if len(tl.Points) == 0 || peak == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="%s">no searches in this window</text></svg>`, w/2, h/2, colorText)
		return template.HTML(b.String())
	}
	ymax, step := niceScale(peak)
	y := func(v int) float64 { return top + plotH - plotH*float64(v)/float64(ymax) }
	for v := 0; v <= ymax; v += step {
		fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%.1f" y2="%.1f" stroke="%s"/>`, left, w-right, y(v), y(v), colorGrid)
		fmt.Fprintf(&b, `<text x="%g" y="%.1f" text-anchor="end" font-size="11" fill="%s">%d</text>`, left-6, y(v)+4, colorText, v)
	}
	slot := plotW / float64(len(tl.Points))
	barW := math.Max(1, math.Min(slot*0.7, 48))
	labelEvery := int(math.Ceil(float64(len(tl.Points)) / 14))
	for i, p := range tl.Points {
		x := left + slot*float64(i) + (slot-barW)/2
		acted := p.Searches - p.Misses
		title := fmt.Sprintf("%s: %d searches, %d likely misses, %d empty, %d calls", pointLabel(tl.Bucket, p.Start, true), p.Searches, p.Misses, p.Empty, p.Calls)
		fmt.Fprintf(&b, `<g><title>%s</title>`, template.HTMLEscapeString(title))
		if acted > 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, x, y(acted), barW, y(0)-y(acted), colorFound)
		}
		if p.Misses > 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, x, y(p.Searches), barW, y(acted)-y(p.Searches), colorMiss)
		}
		b.WriteString(`</g>`)
		if i%labelEvery == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" font-size="11" fill="%s">%s</text>`, x+barW/2, h-8, colorText, pointLabel(tl.Bucket, p.Start, false))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// pointLabel names a bucket by its start, shortly under a bar or fully in its tooltip.
func pointLabel(bucket string, t time.Time, full bool) string {
	switch {
	case bucket == "hour" && full:
		return t.Format("Jan 2 15:04")
	case bucket == "hour":
		return t.Format("15:04")
	case bucket == "week" && full:
		return "week of " + t.Format("Jan 2, 2006")
	case full:
		return t.Format("Mon Jan 2, 2006")
	default:
		return t.Format("Jan 2")
	}
}

// niceScale returns the top of an axis that holds peak, and a step that draws three to
// five grid lines, both round numbers.
func niceScale(peak int) (top, step int) {
	for _, m := range []int{1, 2, 5} {
		for p := 1; ; p *= 10 {
			if s := m * p; s*4 >= peak {
				if step == 0 || s < step {
					step = s
				}
				break
			}
		}
	}
	top = (peak + step - 1) / step * step
	return max(top, step), step
}

// histogramSVG draws a latency histogram: one bar per bin of the 1-2-5 scale.
func histogramSVG(l Latency, color string) template.HTML {
	const w, h, left, bottom, top = 500.0, 190.0, 8.0, 40.0, 18.0
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %g %g" width="%g" height="%g" role="img" aria-label="Latency histogram">`, w, h, w, h)
	if l.Count == 0 {
		fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle" fill="%s">no data</text></svg>`, w/2, h/2, colorText)
		return template.HTML(b.String())
	}
	peak := 0
	for _, bin := range l.Histogram {
		peak = max(peak, bin.Count)
	}
	plotW, plotH := w-2*left, h-top-bottom
	slot := plotW / float64(len(l.Histogram))
	barW := math.Min(slot*0.8, 56)
	fmt.Fprintf(&b, `<line x1="%g" x2="%g" y1="%g" y2="%g" stroke="%s"/>`, left, w-left, top+plotH, top+plotH, colorGrid)
	for i, bin := range l.Histogram {
		x := left + slot*float64(i) + (slot-barW)/2
		bh := plotH * float64(bin.Count) / float64(peak)
		fmt.Fprintf(&b, `<g><title>%s: %d</title>`, template.HTMLEscapeString(binLabel(l.Histogram, i)), bin.Count)
		if bin.Count > 0 {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" rx="2" fill="%s"/>`, x, top+plotH-bh, barW, math.Max(bh, 1), color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="11" fill="%s">%d</text>`, x+barW/2, top+plotH-bh-4, colorText, bin.Count)
		}
		b.WriteString(`</g>`)
		if len(l.Histogram) <= 8 || i%2 == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%g" text-anchor="middle" font-size="11" fill="%s">%s</text>`, x+barW/2, top+plotH+16, colorText, template.HTMLEscapeString(binLabel(l.Histogram, i)))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// binLabel names a bin by its upper bound ("≤ 2ms"), the open last one by its lower.
func binLabel(bins []Bin, i int) string {
	if bins[i].UpToMs == 0 {
		if i == 0 {
			return "> 10s"
		}
		return "> " + shortMs(bins[i-1].UpToMs)
	}
	return "≤ " + shortMs(bins[i].UpToMs)
}

// shortMs writes a bound of the 1-2-5 scale: 10µs, 0.5ms, 20ms, 1s.
func shortMs(ms float64) string {
	switch {
	case ms < 0.1:
		return strconv.FormatFloat(ms*1000, 'g', -1, 64) + "µs"
	case ms < 1000:
		return strconv.FormatFloat(ms, 'g', -1, 64) + "ms"
	default:
		return strconv.FormatFloat(ms/1000, 'g', -1, 64) + "s"
	}
}
