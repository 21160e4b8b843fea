package plugin

import (
	"context"
	"errors"
	"fmt"

	"go.temporal.io/sdk/client"

	"github.com/memagent/memagent/internal/assemble"
	"github.com/memagent/memagent/internal/searchattrs"
)

// NewClient runs when a client that lists the plugin connects. Once it
// has, the plugin makes sure the namespace has memagent's search
// attributes: it registers the missing ones where the server allows it,
// and otherwise fails the connection, naming `starter setup`. A run that
// upserts an unregistered attribute would sit in a failing workflow task
// for good. A lazy client is not checked (nothing has connected yet), and
// a server whose operator service cannot be asked is only logged.
//
// A plugin listed in worker options alone never sees a client and cannot
// check; unless its host called CheckSearchAttributes, it says so when the
// worker starts.
func (p *Plugin) NewClient(ctx context.Context, o client.PluginNewClientOptions, next func(context.Context, client.PluginNewClientOptions) error) error {
	if err := p.SimplePlugin.NewClient(ctx, o, next); err != nil {
		return err
	}
	if o.Lazy {
		return nil
	}
	c := o.FromExisting
	if c == nil {
		co := o.ClientOptions
		co.Plugins = nil // this check's own connection needs no plugin
		dialed, err := client.DialContext(ctx, co)
		if err != nil {
			p.opts.Logger.Warn("memagent plugin: search attributes not checked", "err", err)
			return nil
		}
		defer dialed.Close()
		c = dialed
	}
	err := p.CheckSearchAttributes(ctx, c, namespaceOf(o.ClientOptions))
	var missing *searchattrs.MissingError
	switch {
	case errors.As(err, &missing):
		return fmt.Errorf("memagent plugin: %w", err)
	case err != nil:
		p.opts.Logger.Warn("memagent plugin: search attributes not checked", "err", err)
	}
	return nil
}

// CheckSearchAttributes makes sure namespace has memagent's search
// attributes, through c: it registers the missing ones where the server
// allows it, and otherwise returns an error naming `starter setup`, as a
// client that lists the plugin does when it connects. A host whose client
// does not list the plugin (memagent's own worker, say) calls it before
// starting the worker; the worker then does not log that the attributes
// were not checked.
func (p *Plugin) CheckSearchAttributes(ctx context.Context, c client.Client, namespace string) error {
	if err := assemble.CheckSearchAttributes(ctx, c, namespace, p.opts.Logger); err != nil {
		return err
	}
	p.mu.Lock()
	p.attrsChecked = true
	p.mu.Unlock()
	return nil
}

func namespaceOf(o client.Options) string {
	if o.Namespace == "" {
		return client.DefaultNamespace
	}
	return o.Namespace
}
