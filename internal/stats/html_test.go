package stats

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/toolshed/toolshed/internal/testupstream"
)

// TestHTMLSelfContained checks that the page needs nothing from anywhere: no script, no
// link, no URL but the page's own anchors.
func TestHTMLSelfContained(t *testing.T) {
	r := recordedReport(t, testCatalog(t))
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{"<script", "<link", "<img", "@import", "url(", "http://", "https://", "@font-face"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page contains %q: it must need no network and no other file", bad)
		}
	}
	if _, err := html.Parse(strings.NewReader(page)); err != nil {
		t.Fatal(err)
	}
}

// TestHTMLEscapes checks that what the log holds (queries, tool names) cannot inject markup.
func TestHTMLEscapes(t *testing.T) {
	searches, calls := recorded(t)
	searches[0].Query = `<script>alert(1)</script>`
	searches[0].Results = nil
	calls[0].Tool = `x__<b onclick="y">`
	r := Compute(searches, calls, Options{})
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "<script>") || strings.Contains(b.String(), `<b onclick`) {
		t.Error("a query or tool name from the log reached the page as markup")
	}
}

// runChromium runs headless Chromium on a file with the given flags and returns what it
// wrote to standard output.
func runChromium(t *testing.T, bin, file string, flags ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run", "--disable-dev-shm-usage", // shared memory in the test's TMPDIR, never left in /dev/shm
		"--user-data-dir=" + filepath.Join(t.TempDir(), "profile"),
	}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, "file://"+file)...)
	cmd.Env = testupstream.ClientEnv(t)
	testupstream.Own(t, cmd)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestHTMLInChromium renders the recorded log's page in headless Chromium, reads the
// headline figures back from the DOM the browser built, and checks that the screenshot
// is a page of the window's size with the charts' colors drawn on it.
func TestHTMLInChromium(t *testing.T) {
	bin := testupstream.Chromium(t)
	r := recordedReport(t, testCatalog(t))
	var b bytes.Buffer
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "report.html")
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	dom := runChromium(t, bin, file, "--dump-dom")
	metrics := domMetrics(t, dom)
	want := map[string]string{
		"window":         "2026-11-24 00:00 UTC to 2026-12-01 00:00 UTC (7 days)",
		"searches":       "22",
		"sessions":       "13",
		"empty-pct":      "18.2%",
		"misses-pct":     "40.0%",
		"misses":         "8",
		"tokens-saved":   "37,284",
		"calls":          "17",
		"low-rank-pct":   "11.8%",
		"unsurfaced-pct": "17.6%",
		"search-p50":     "270µs",
		"search-p99":     "420µs",
		"call-p50":       "412ms",
		"never-surfaced": "2",
	}
	for k, v := range want {
		if metrics[k] != v {
			t.Errorf("DOM metric %s = %q, want %q", k, metrics[k], v)
		}
	}
	if !strings.Contains(metrics["overrides"], `- tools: "github__create_issue"`) ||
		!strings.Contains(metrics["overrides"], `keywords: ["bug", "file", "open", "raise", "report", "ticket"]`) {
		t.Errorf("DOM overrides:\n%s", metrics["overrides"])
	}
	// One bar per day with searches, one amber bar per day with misses.
	bars, misses := 0, 0
	for _, p := range r.Timeline.Points {
		if p.Searches > p.Misses {
			bars++
		}
		if p.Misses > 0 {
			misses++
		}
	}
	if got := strings.Count(string(dom), `fill="`+colorMiss+`"`); got != misses {
		t.Errorf("the DOM has %d miss bars, want %d", got, misses)
	}
	if bars != 7 || misses != 5 {
		t.Errorf("the recorded week has %d days of searches and %d with misses, want 7 and 5", bars, misses)
	}

	const width, height = 1200, 2300
	shot := filepath.Join(dir, "shot.png")
	runChromium(t, bin, file, "--screenshot="+shot, fmt.Sprintf("--window-size=%d,%d", width, height))
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is no PNG: %v", err)
	}
	if got := img.Bounds().Size(); got != image.Pt(width, height) {
		t.Errorf("screenshot is %v, want %dx%d", got, width, height)
	}
	colors := colorCounts(img)
	background := colors[rgb(0xf5, 0xf7, 0xfa)]
	if n := img.Bounds().Dx() * img.Bounds().Dy(); background > n*9/10 || len(colors) < 50 {
		t.Errorf("the screenshot looks blank: %d colors, %d of %d pixels the page background", len(colors), background, n)
	}
	// The charts and bars drew: each color fills at least a bar's worth of pixels.
	for name, c := range map[string]color.RGBA{
		"searches acted on (blue)": rgb(0x3b, 0x6f, 0xd8),
		"likely misses (amber)":    rgb(0xe8, 0xa3, 0x3d),
		"call latency (violet)":    rgb(0x7a, 0x5a, 0xf5),
		"errors (red)":             rgb(0xd6, 0x45, 0x45),
		"overrides block (dark)":   rgb(0x1f, 0x29, 0x33),
	} {
		if colors[c] < 400 {
			t.Errorf("the screenshot has %d pixels of %s, want a drawn chart or bar", colors[c], name)
		}
	}
	if dir := os.Getenv("TOOLSHED_STATS_SHOT"); dir != "" {
		data, _ := os.ReadFile(shot)
		os.WriteFile(filepath.Join(dir, "stats.png"), data, 0o644)
		os.WriteFile(filepath.Join(dir, "stats.html"), b.Bytes(), 0o644)
	}
}

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{r, g, b, 0xff} }

func colorCounts(img image.Image) map[color.RGBA]int {
	counts := map[color.RGBA]int{}
	bounds := img.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	return counts
}

var spaces = regexp.MustCompile(`\s+`)

// domMetrics returns the text of each element with a data-metric attribute; the
// overrides keep their lines, the rest have their spaces collapsed.
func domMetrics(t *testing.T, dom []byte) map[string]string {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(dom))
	if err != nil {
		t.Fatalf("the DOM Chromium dumped does not parse: %v", err)
	}
	out := map[string]string{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		for _, a := range n.Attr {
			if a.Key == "data-metric" {
				var text strings.Builder
				var collect func(*html.Node)
				collect = func(n *html.Node) {
					if n.Type == html.TextNode {
						text.WriteString(n.Data)
					}
					for c := n.FirstChild; c != nil; c = c.NextSibling {
						collect(c)
					}
				}
				collect(n)
				if a.Val == "overrides" {
					out[a.Val] = text.String()
				} else {
					out[a.Val] = strings.TrimSpace(spaces.ReplaceAllString(text.String(), " "))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(out) == 0 {
		t.Fatalf("Chromium's DOM has no data-metric element:\n%s", dom)
	}
	return out
}
