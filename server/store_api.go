package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/loomkit/loom/memory"
)

// This file serves the LangGraph API's long-term store (memory.Items):
// PUT, GET and DELETE /store/items, POST /store/items/search and POST
// /store/namespaces, each API key with its own items, as the official
// SDK's client.store calls them.

// sweepEvery is how often the server deletes the store's expired items.
const sweepEvery = time.Minute

// storeRoutes serves the store's routes on m and starts the sweeper of
// expired items, which stops when the server does.
func (s *Server) storeRoutes(m *http.ServeMux) {
	for p, h := range map[string]handler{
		"PUT /store/items":         s.putStoreItem,
		"GET /store/items":         s.getStoreItem,
		"DELETE /store/items":      s.deleteStoreItem,
		"POST /store/items/search": s.searchStoreItems,
		"POST /store/namespaces":   s.listStoreNamespaces,
	} {
		m.Handle(p, s.api(h))
	}
	go s.sweepStore(s.baseCtx)
}

func (s *Server) sweepStore(ctx context.Context) {
	t := time.NewTicker(sweepEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.items.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("store: deleting expired items failed", "err", err)
			} else if n > 0 {
				s.log.Debug("store: deleted expired items", "items", n)
			}
		}
	}
}

// storeError is what the client reads for an error of the store.
func storeError(err error) error {
	switch {
	case errors.Is(err, memory.ErrInvalid):
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "%s", strings.TrimPrefix(err.Error(), memory.ErrInvalid.Error()+": "))
	case errors.Is(err, memory.ErrFull):
		_, why, _ := strings.Cut(err.Error(), memory.ErrFull.Error()+": ")
		return errorf(http.StatusConflict, "store_full", "the store of this API key is full: %s", why)
	case errors.Is(err, memory.ErrEmbed):
		return errorf(http.StatusBadGateway, "embedder_failed", "the embedding model did not answer; try again later")
	}
	return err
}

type storeItemRequest struct {
	Namespace []string        `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
	Index     json.RawMessage `json:"index"`
	TTL       *float64        `json:"ttl"`
}

func (s *Server) putStoreItem(w http.ResponseWriter, r *http.Request, owner string) error {
	var req storeItemRequest
	if err := decodeKnown(r, "store item", &req); err != nil {
		return err
	}
	opts := memory.PutOptions{}
	var err error
	if opts.TTL, err = memory.TTLMinutes(req.TTL); err != nil {
		return storeError(err)
	}
	switch idx := bytes.TrimSpace(req.Index); {
	case len(idx) == 0, string(idx) == "null", string(idx) == "true":
	case string(idx) == "false":
		opts.Index = []string{}
	default:
		if err := json.Unmarshal(idx, &opts.Index); err != nil {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "index must be false, null or a list of field paths")
		}
		if opts.Index == nil {
			opts.Index = []string{}
		}
	}
	if err := s.items.For(owner).Put(r.Context(), req.Namespace, req.Key, req.Value, opts); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// getStoreItem answers the item, or null when there is none (what the
// SDK's getItem expects).
func (s *Server) getStoreItem(w http.ResponseWriter, r *http.Request, owner string) error {
	q := r.URL.Query()
	for k := range q {
		if k != "namespace" && k != "key" && k != "refresh_ttl" {
			return errorf(http.StatusUnprocessableEntity, "unsupported_field", "query parameter %s is not supported by this server (namespace, key, refresh_ttl)", k)
		}
	}
	var ns []string
	if v := q.Get("namespace"); v != "" {
		ns = strings.Split(v, ".")
	}
	noRefresh := false
	switch v := q.Get("refresh_ttl"); v {
	case "", "true", "null":
	case "false":
		noRefresh = true
	default:
		return errorf(http.StatusUnprocessableEntity, "invalid_input", "refresh_ttl must be true or false, not %q", v)
	}
	it, err := s.items.For(owner).Get(r.Context(), ns, q.Get("key"), noRefresh)
	if errors.Is(err, memory.ErrNotFound) {
		writeJSON(w, http.StatusOK, nil)
		return nil
	}
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, it)
	return nil
}

func (s *Server) deleteStoreItem(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		Namespace []string `json:"namespace"`
		Key       string   `json:"key"`
	}
	if err := decodeKnown(r, "store item", &req); err != nil {
		return err
	}
	if err := s.items.For(owner).Delete(r.Context(), req.Namespace, req.Key); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *Server) searchStoreItems(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		NamespacePrefix []string                   `json:"namespace_prefix"`
		Filter          map[string]json.RawMessage `json:"filter"`
		Limit           *int                       `json:"limit"`
		Offset          int                        `json:"offset"`
		Query           string                     `json:"query"`
		RefreshTTL      *bool                      `json:"refresh_ttl"`
	}
	if err := decodeKnown(r, "store search", &req); err != nil {
		return err
	}
	opts := memory.SearchOptions{Filter: req.Filter, Query: req.Query, Limit: 10, Offset: req.Offset,
		NoRefresh: req.RefreshTTL != nil && !*req.RefreshTTL}
	if req.Limit != nil {
		if *req.Limit < 1 {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "limit is %d; want 1 or more", *req.Limit)
		}
		opts.Limit = *req.Limit
	}
	items, err := s.items.For(owner).Search(r.Context(), req.NamespacePrefix, opts)
	if err != nil {
		return storeError(err)
	}
	if items == nil {
		items = []memory.Item{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items})
	return nil
}

func (s *Server) listStoreNamespaces(w http.ResponseWriter, r *http.Request, owner string) error {
	var req struct {
		Prefix   []string `json:"prefix"`
		Suffix   []string `json:"suffix"`
		MaxDepth *int     `json:"max_depth"`
		Limit    *int     `json:"limit"`
		Offset   int      `json:"offset"`
	}
	if err := decodeKnown(r, "store namespaces", &req); err != nil {
		return err
	}
	opts := memory.NamespaceOptions{Prefix: req.Prefix, Suffix: req.Suffix, Limit: 100, Offset: req.Offset}
	if req.MaxDepth != nil {
		if *req.MaxDepth < 1 {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "max_depth is %d; want 1 or more", *req.MaxDepth)
		}
		opts.MaxDepth = *req.MaxDepth
	}
	if req.Limit != nil {
		if *req.Limit < 1 {
			return errorf(http.StatusUnprocessableEntity, "invalid_input", "limit is %d; want 1 or more", *req.Limit)
		}
		opts.Limit = *req.Limit
	}
	nss, err := s.items.For(owner).ListNamespaces(r.Context(), opts)
	if err != nil {
		return storeError(err)
	}
	if nss == nil {
		nss = [][]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": nss})
	return nil
}
