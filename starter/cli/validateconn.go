package cli

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/memagent/memagent/internal/clientconf"
	"github.com/memagent/memagent/memclient"
)

// validationConn is the validate commands' one link to the connection
// settings (flags and environment, internal/clientconf): everything else
// of them speaks memclient and api only.
type validationConn struct {
	cfg clientconf.Config
	err error
}

func bindValidationConn(cmd *cobra.Command) *validationConn {
	c := &validationConn{}
	c.cfg, c.err = clientconf.Load()
	connectionFlags(cmd, &c.cfg)
	return c
}

// open connects (as reviewer, when named: its client identity says so)
// and returns the command's context, a memclient over the connection,
// and the function that ends the command.
func (c *validationConn) open(ctx context.Context, stderr io.Writer, asJSON bool, name, reviewer string) (context.Context, *memclient.Client, func(error), error) {
	if c.err != nil {
		return ctx, nil, nil, c.err
	}
	cfg := c.cfg
	if reviewer != "" {
		cfg.ClientIdentity = clientIdentity(name, reviewer)
	}
	ctx, s, end, err := startCommand(ctx, cfg, stderr, asJSON, name)
	if err != nil {
		return ctx, nil, nil, err
	}
	return ctx, memclient.New(s.temporal, memclient.Options{TaskQueue: cfg.TaskQueue}), end, nil
}
