// Package versionmap converts between a checkpoint's channel list and the
// channel → version object the SQL savers store.
package versionmap
