package embedstack

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/temporalio/ui-server/v2/server/api"
	"github.com/temporalio/ui-server/v2/server/auth"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	"github.com/temporalio/ui-server/v2/server/cors"
	"github.com/temporalio/ui-server/v2/server/csrf"
	"github.com/temporalio/ui-server/v2/server/headers"
	"github.com/temporalio/ui-server/v2/server/route"
	"github.com/temporalio/ui-server/v2/ui"
	"go.temporal.io/api/workflowservice/v1"
	"google.golang.org/grpc"
)

// newUIHandler builds the Temporal Web UI (embedded assets plus its HTTP API
// proxied to the frontend at frontendAddr) as an http.Handler.
//
// ui-server's own Server binds its address itself, exits the process through
// log.Fatal when it cannot, and never closes its gRPC connection. The stack
// therefore assembles the same echo routes and middleware from ui-server's
// exported packages, serves them on a listener it owns, and closes the
// returned connection on Close.
func newUIHandler(frontendAddr, namespace string) (http.Handler, *grpc.ClientConn, error) {
	cfg := &uiconfig.Config{
		TemporalGRPCAddress: frontendAddr,
		EnableUI:            true,
		DefaultNamespace:    namespace,
		// Loopback over plain HTTP: the CSRF cookie must not require TLS.
		CORS:             uiconfig.CORS{CookieInsecure: true},
		HideLogs:         true,
		DisableNewsFetch: true,
	}
	provider, err := uiconfig.NewConfigProviderWithRefresh(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("ui config: %w", err)
	}
	conn, err := api.CreateGRPCConnection(provider)
	if err != nil {
		return nil, nil, fmt.Errorf("ui connection to %s: %w", frontendAddr, err)
	}
	if conn == nil {
		return nil, nil, errors.New("ui connection to " + frontendAddr + ": no connection")
	}

	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	const secureCookie = false
	e.Use(middleware.Recover())
	e.Use(middleware.Gzip())
	e.Use(cors.CORSMiddleware(cors.CORSConfig{
		AllowHeaders: []string{
			echo.HeaderOrigin, echo.HeaderContentType, echo.HeaderAccept,
			echo.HeaderXCSRFToken, echo.HeaderAuthorization, auth.AuthorizationExtrasHeader,
			"Caller-Type",
		},
		AllowCredentials: true,
		ConfigProvider:   provider,
	}))
	e.Use(middleware.Secure())
	e.Use(csrf.EnsureTokenCookie(secureCookie))
	e.Use(middleware.CSRFWithConfig(csrf.MiddlewareConfig(provider, secureCookie)))
	e.Pre(route.PublicPath(cfg.PublicPath))

	route.SetHealthRoute(e)

	apiMiddleware := []api.Middleware{
		headers.WithForwardHeaders([]string{auth.AuthorizationExtrasHeader, "Caller-Type"}),
	}
	writes := route.DisableWriteMiddleware(provider)
	g := e.Group("/api/v1")
	g.GET("/settings", api.GetSettings(provider))
	g.GET(api.WorkflowRawHistoryUrl, api.WorkflowRawHistoryHandler(workflowservice.NewWorkflowServiceClient(conn)), writes)
	g.Match([]string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete},
		"/*", api.TemporalAPIHandler(provider, apiMiddleware, conn), writes)

	assets, err := ui.Assets()
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("ui assets: %w", err)
	}
	assets, err = fs.Sub(assets, "local")
	if err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("ui assets: %w", err)
	}
	if err := route.SetUIRoutes(e, cfg.PublicPath, assets); err != nil {
		_ = conn.Close()
		return nil, nil, fmt.Errorf("ui routes: %w", err)
	}
	route.SetRenderRoute(e, cfg.PublicPath)
	return e, conn, nil
}
