// Package notify is the worker's HTTP client for notifications to hosts a
// caller names (a batch's notify_url): it decides which hosts and
// addresses the worker may reach for a caller, and enforces that on the
// address it actually dials, so that a name that resolves differently
// later (DNS rebinding) cannot point a notification at the worker's own
// network.
//
// It must never report to the caller what a host answered: callers get
// only whether a notification was delivered.
package notify
