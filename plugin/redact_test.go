package plugin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

func TestOptionsPrintNoSecret(t *testing.T) {
	o := Options{
		Bucket: "b", S3AccessKeyID: "AKIAVISIBLE", S3SecretAccessKey: "s3-SECRET1",
		ModelURLs: []string{"http://user:url-SECRET2@vllm:8000/v1"}, ModelAPIKey: "sk-SECRET3",
		CodecKeys:   []CodecKey{{ID: "k1", Key: []byte("key-SECRET4-key-SECRET4-key-SECR")}},
		CodecServer: CodecHandlerOptions{Token: "codec-SECRET5"},
		AWSConfig:   &aws.Config{Credentials: credentials.NewStaticCredentialsProvider("AKIA", "aws-SECRET6", "")},
		S3Endpoint:  "http://minio:s3url-SECRET7@vllm-s3:9000",
	}
	outs := map[string]string{}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		outs[verb] = fmt.Sprintf(verb, o)
		outs["pointer "+verb] = fmt.Sprintf(verb, &o)
	}
	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"slog text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"slog JSON": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var b bytes.Buffer
		slog.New(h(&b)).Info("options", "opts", o, "ptr", &o)
		outs[name] = b.String()
	}
	for name, v := range map[string]any{"JSON of a codec key": o.CodecKeys[0], "JSON of the codec server's options": o.CodecServer} {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		outs[name] = string(b) + " AKIAVISIBLE vllm"
	}
	for how, s := range outs {
		for _, secret := range []string{"SECRET1", "SECRET2", "SECRET3", "SECRET4", "SECRET5", "SECRET6", "SECRET7", "107 101 121", "a2V5LVNFQ1JFVD"} {
			if strings.Contains(s, secret) {
				t.Errorf("%s prints %s: %s", how, secret, s)
			}
		}
		if !strings.Contains(s, "AKIAVISIBLE") || !strings.Contains(s, "vllm") {
			t.Errorf("%s hides what is not secret: %s", how, s)
		}
	}
}
