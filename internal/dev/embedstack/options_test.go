package embedstack_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/memagent/memagent/internal/dev/embedstack"
)

// TestStartRejects checks that bad options and busy ports fail fast with a
// message that says what to do, before any server starts.
func TestStartRejects(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port

	free := embedstack.Options{TemporalPort: embedstack.FreePort, UIPort: embedstack.FreePort, S3Port: embedstack.FreePort, Logger: testLogger()}
	with := func(f func(*embedstack.Options)) embedstack.Options {
		o := free
		f(&o)
		return o
	}
	tests := []struct {
		name    string
		opts    embedstack.Options
		wantErr string
	}{
		{"host name", with(func(o *embedstack.Options) { o.Host = "example.com" }), "not an IP address"},
		{"port out of range", with(func(o *embedstack.Options) { o.S3Port = 70000 }), "out of range"},
		{"negative port", with(func(o *embedstack.Options) { o.UIPort = -2 }), "out of range"},
		{"temporal port too high", with(func(o *embedstack.Options) { o.TemporalPort = 65530 }), "too high"},
		{"bad bucket", with(func(o *embedstack.Options) { o.Bucket = "Bad_Bucket" }), "bucket"},
		{"s3 port busy", with(func(o *embedstack.Options) { o.S3Port = busyPort }), "in use"},
		{"ui port busy", with(func(o *embedstack.Options) { o.UIPort = busyPort }), "in use"},
		{"temporal port busy", with(func(o *embedstack.Options) { o.TemporalPort = busyPort }), "in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			st, err := embedstack.Start(ctx, tt.opts)
			if err == nil {
				_ = st.Close()
				t.Fatalf("Start succeeded, want an error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Start error = %q, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}
