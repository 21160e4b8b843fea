package activities

import (
	"context"
	"slices"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/memagent/memagent/api"
	"github.com/memagent/memagent/internal/actwire"
	"github.com/memagent/memagent/internal/memagent"
)

func TestMetricsCountChunksAndMemorySize(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	reader := sdkmetric.NewManualReader()
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	f.acts.Metrics = m
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	for i := range p.Chunks {
		var out actwire.UpdateOutput
		if err := f.exec(t, UpdateMemoryName, f.updateInput(p, i), &out); err != nil {
			t.Fatalf("UpdateMemory %d: %v", i, err)
		}
	}
	var res api.DocumentQAResult
	if err := f.exec(t, AnswerName, actwire.AnswerInput{Question: testQuestion, Memory: "m", ResultURI: tracePrefix + "result.json"}, &res); err != nil {
		t.Fatal(err)
	}

	var kinds []string
	for _, c := range f.model.Calls() {
		kinds = append(kinds, c.Kind)
	}
	if want := []string{"update", "update", "update", "final"}; !slices.Equal(kinds, want) {
		t.Errorf("request kinds = %v, want %v", kinds, want)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	model := attribute.NewSet(attribute.String("model", "default-model"))
	got := map[string][2]int64{} // name: value or count, sum
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if dp.Attributes.Equals(&model) {
						got[mt.Name] = [2]int64{dp.Value, 0}
					}
				}
			case metricdata.Histogram[int64]:
				for _, dp := range d.DataPoints {
					if dp.Attributes.Equals(&model) {
						got[mt.Name] = [2]int64{int64(dp.Count), dp.Sum}
					}
				}
			}
		}
	}
	// The fake model answers "memory N": 2 words, 8 bytes.
	want := map[string][2]int64{
		"memagent.chunks.processed": {3, 0},
		"memagent.memory.tokens":    {3, 6},
		"memagent.memory.size":      {3, 24},
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("%s = %v, want %v (value or count, sum)", name, got[name], w)
		}
	}
}

func TestNilMetricsRecordNothing(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(1)))
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	var out actwire.UpdateOutput
	if err := f.exec(t, UpdateMemoryName, f.updateInput(p, 0), &out); err != nil {
		t.Fatalf("UpdateMemory without Metrics: %v", err)
	}
}

func TestMetricsObserveChunkCache(t *testing.T) {
	f := newFixture(t, []byte(makeDoc(3)))
	reader := sdkmetric.NewManualReader()
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.ObserveChunkCache(&f.acts.Chunks); err != nil {
		t.Fatal(err)
	}
	p := f.prepare(t, api.ModelOptions{ChunkTokens: 100})
	for _, q := range []string{"first question?", "second question?"} {
		in := f.updateInput(p, 0)
		in.Question, in.TracePrefix = q, tracePrefix+q[:5]+"/"
		var out actwire.ReviewUpdateOutput
		if err := f.exec(t, ReviewUpdateName, in, &out); err != nil {
			t.Fatal(err)
		}
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mm := range sm.Metrics {
			switch d := mm.Data.(type) {
			case metricdata.Sum[int64]:
				got[mm.Name] = d.DataPoints[0].Value
			case metricdata.Gauge[int64]:
				got[mm.Name] = d.DataPoints[0].Value
			}
		}
	}
	s := f.acts.Chunks.Stats()
	if got["memagent.chunk_cache.reads"] != 1 || got["memagent.chunk_cache.hits"] != s.Hits || got["memagent.chunk_cache.size"] != s.Bytes || s.Bytes == 0 {
		t.Errorf("chunk cache metrics %v, stats %+v: want 1 read and the stats' hits and bytes", got, s)
	}
}

// TestMetricsCountOCRPages: pages read by OCR count by outcome with the
// engine's seconds; pages reused from an earlier conversion do not.
func TestMetricsCountOCRPages(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := NewMetrics(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	a := &Activities{Metrics: m}
	a.recordOCR(context.Background(), []memagent.OCRPage{
		{Page: 1, Words: 400, Seconds: 2.5}, {Page: 2, Words: 300, Seconds: 1.5}, {Page: 3, Blank: true},
		{Page: 4, Error: "timed out", Seconds: 0}, {Page: 5, Words: 100, Seconds: 9, Reused: true},
	})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	pages, seconds := map[string]int64{}, map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				if mt.Name == "memagent.ocr.pages" {
					for _, dp := range d.DataPoints {
						v, _ := dp.Attributes.Value("outcome")
						pages[v.AsString()] = dp.Value
					}
				}
			case metricdata.Sum[float64]:
				if mt.Name == "memagent.ocr.duration" {
					for _, dp := range d.DataPoints {
						v, _ := dp.Attributes.Value("outcome")
						seconds[v.AsString()] = dp.Value
					}
				}
			}
		}
	}
	if pages["read"] != 2 || pages["blank"] != 1 || pages["failed"] != 1 || seconds["read"] != 4 {
		t.Errorf("OCR pages %v, seconds %v; want 2 read in 4 s, 1 blank, 1 failed, the reused page not counted", pages, seconds)
	}
}
