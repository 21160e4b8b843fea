package embedstack

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/rclone/gofakes3"
	"github.com/rclone/gofakes3/s3mem"

	"github.com/memagent/memagent/internal/dev/embedstack/s3fs"
)

// s3Dir is the directory under Options.DataDir that holds the objects.
const s3Dir = "s3"

// newS3Handler builds the S3-compatible handler: objects in memory when
// dataDir is empty, else as files under dataDir/s3. Requests must be signed
// (SigV4) with the development credentials. The bucket is created if it does
// not exist.
func newS3Handler(ctx context.Context, dataDir, bucket string, logger *slog.Logger) (*gofakes3.GoFakeS3, error) {
	var backend gofakes3.Backend
	if dataDir == "" {
		backend = s3mem.New()
	} else {
		fb, err := s3fs.New(filepath.Join(dataDir, s3Dir))
		if err != nil {
			return nil, err
		}
		backend = fb
	}
	err := backend.CreateBucket(ctx, bucket)
	if err != nil && !gofakes3.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	return gofakes3.New(backend,
		gofakes3.WithV4Auth(map[string]string{DevAccessKey: DevSecretKey}),
		gofakes3.WithLogger(s3Logger{l: logger}),
		// Bucket names come from the path only: "memagent.localhost" style
		// virtual hosts are not used on loopback.
		gofakes3.WithHostBucket(false),
	), nil
}

// s3Logger adapts gofakes3's leveled logger to slog. gofakes3 logs internal
// errors at LogErr; everything else is request chatter.
type s3Logger struct {
	l *slog.Logger
}

func (s s3Logger) Print(level gofakes3.LogLevel, v ...any) {
	l := slog.LevelDebug
	switch level {
	case gofakes3.LogErr:
		l = slog.LevelError
	case gofakes3.LogWarn:
		l = slog.LevelWarn
	}
	s.l.Log(context.Background(), l, "s3 server", "detail", fmt.Sprint(v...))
}
