package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agentgraph/agentgraph/store"
)

// apiItem is the API's store Item.
type apiItem struct {
	Namespace []string  `json:"namespace"`
	Key       string    `json:"key"`
	Value     any       `json:"value"` // the item's JSON text, or its map
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	Score     *float64  `json:"score,omitempty"`
}

// showItem answers an item's value as it was put, keys in the order the
// client sent them (as LangGraph's JS server does), when the store kept
// the text; otherwise (a store that keeps none, an item put by Go code
// without store.WithJSON) as its map, keys sorted.
func showItem(it store.Item) apiItem {
	a := apiItem{Namespace: it.Namespace, Key: it.Key, Value: it.Value, CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, Score: it.Score}
	if it.JSON != nil {
		a.Value = it.JSON
	}
	return a
}

// storeOf returns the store, or a 404 when the server has none.
func (s *Server) storeOf() (store.Store, error) {
	if s.cfg.store == nil {
		return nil, errorf(http.StatusNotFound, "this server has no store (see server.WithStore)")
	}
	return s.cfg.store, nil
}

// storeError maps the store's errors on bad input to 422.
func storeError(err error) error {
	var ne *store.InvalidNamespaceError
	if errors.As(err, &ne) || errors.Is(err, store.ErrInvalidOption) {
		return errorf(http.StatusUnprocessableEntity, "%v", err)
	}
	return err
}

func (s *Server) storePut(w http.ResponseWriter, r *http.Request) {
	st, err := s.storeOf()
	if err != nil {
		fail(w, err)
		return
	}
	var body struct {
		Namespace []string        `json:"namespace"`
		Key       string          `json:"key"`
		Value     json.RawMessage `json:"value"`
		Index     json.RawMessage `json:"index"`
		TTL       *float64        `json:"ttl"`
	}
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	var value map[string]any
	if err := json.Unmarshal(body.Value, &value); err != nil || value == nil {
		fail(w, errorf(http.StatusUnprocessableEntity, "value must be a JSON object"))
		return
	}
	// The text goes with the map, so that the store keeps the value as
	// sent; it checks the two agree (they do: both are the body's).
	opts := []store.PutOption{store.WithJSON(body.Value)}
	if body.TTL != nil {
		if *body.TTL < 0 {
			fail(w, errorf(http.StatusUnprocessableEntity, "ttl must not be negative"))
			return
		}
		opts = append(opts, store.WithTTL(time.Duration(*body.TTL*float64(time.Minute))))
	}
	switch idx := strings.TrimSpace(string(body.Index)); {
	case idx == "" || idx == "null":
	case idx == "false":
		opts = append(opts, store.NoIndex())
	default:
		var fields []string
		if err := json.Unmarshal(body.Index, &fields); err != nil {
			fail(w, errorf(http.StatusUnprocessableEntity, "index must be null, false or a list of field paths"))
			return
		}
		opts = append(opts, store.IndexFields(fields...))
	}
	ns, err := s.authorizeStore(r.Context(), ActionUpdate, body.Namespace)
	if err != nil {
		fail(w, err)
		return
	}
	if err := st.Put(r.Context(), ns, body.Key, value, opts...); err != nil {
		fail(w, storeError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) storeGet(w http.ResponseWriter, r *http.Request) {
	st, err := s.storeOf()
	if err != nil {
		fail(w, err)
		return
	}
	q := r.URL.Query()
	ns := q.Get("namespace")
	if ns == "" {
		fail(w, errorf(http.StatusUnprocessableEntity, "namespace is required"))
		return
	}
	if !q.Has("key") {
		fail(w, errorf(http.StatusUnprocessableEntity, "key is required"))
		return
	}
	var opts []store.GetOption
	if v := q.Get("refresh_ttl"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			fail(w, errorf(http.StatusUnprocessableEntity, "refresh_ttl must be true or false"))
			return
		}
		opts = append(opts, store.RefreshTTL(b))
	}
	namespace, err := s.authorizeStore(r.Context(), ActionRead, strings.Split(ns, "."))
	if err != nil {
		fail(w, err)
		return
	}
	it, err := st.Get(r.Context(), namespace, q.Get("key"), opts...)
	if err != nil {
		fail(w, storeError(err))
		return
	}
	if it == nil {
		writeJSON(w, http.StatusOK, nil)
		return
	}
	writeJSON(w, http.StatusOK, showItem(*it))
}

func (s *Server) storeDelete(w http.ResponseWriter, r *http.Request) {
	st, err := s.storeOf()
	if err != nil {
		fail(w, err)
		return
	}
	var body struct {
		Namespace []string `json:"namespace"`
		Key       *string  `json:"key"`
	}
	if err := decodeBody(r, &body); err != nil {
		fail(w, err)
		return
	}
	if body.Key == nil {
		fail(w, errorf(http.StatusUnprocessableEntity, "key is required"))
		return
	}
	ns, err := s.authorizeStore(r.Context(), ActionDelete, body.Namespace)
	if err != nil {
		fail(w, err)
		return
	}
	if err := st.Delete(r.Context(), ns, *body.Key); err != nil {
		fail(w, storeError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) storeSearch(w http.ResponseWriter, r *http.Request) {
	st, err := s.storeOf()
	if err != nil {
		fail(w, err)
		return
	}
	var body struct {
		page
		NamespacePrefix []string       `json:"namespace_prefix"`
		Filter          map[string]any `json:"filter"`
		Query           string         `json:"query"`
		RefreshTTL      *bool          `json:"refresh_ttl"`
	}
	limit, offset, err := decodePaged(r, &body, 10)
	if err != nil {
		fail(w, err)
		return
	}
	opts := []store.SearchOption{store.Limit(limit), store.Offset(offset)}
	if len(body.Filter) > 0 {
		opts = append(opts, store.Filter(body.Filter))
	}
	if body.Query != "" {
		opts = append(opts, store.Query(body.Query))
	}
	if body.RefreshTTL != nil {
		opts = append(opts, store.RefreshTTL(*body.RefreshTTL))
	}
	prefix, err := s.authorizeStore(r.Context(), ActionSearch, body.NamespacePrefix)
	if err != nil {
		fail(w, err)
		return
	}
	items, err := st.Search(r.Context(), prefix, opts...)
	if err != nil {
		fail(w, storeError(err))
		return
	}
	out := make([]apiItem, len(items))
	for i, it := range items {
		out[i] = showItem(it)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": out})
}

func (s *Server) storeNamespaces(w http.ResponseWriter, r *http.Request) {
	st, err := s.storeOf()
	if err != nil {
		fail(w, err)
		return
	}
	var body struct {
		page
		Prefix   []string `json:"prefix"`
		Suffix   []string `json:"suffix"`
		MaxDepth *int     `json:"max_depth"`
	}
	limit, offset, err := decodePaged(r, &body, 100)
	if err != nil {
		fail(w, err)
		return
	}
	prefix, err := s.authorizeStore(r.Context(), ActionSearch, body.Prefix)
	if err != nil {
		fail(w, err)
		return
	}
	opts := []store.ListOption{store.Limit(limit), store.Offset(offset)}
	if len(prefix) > 0 {
		opts = append(opts, store.Prefix(prefix...))
	}
	if len(body.Suffix) > 0 {
		opts = append(opts, store.Suffix(body.Suffix...))
	}
	if body.MaxDepth != nil {
		opts = append(opts, store.MaxDepth(*body.MaxDepth))
	}
	ns, err := st.ListNamespaces(r.Context(), opts...)
	if err != nil {
		fail(w, storeError(err))
		return
	}
	if ns == nil {
		ns = [][]string{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"namespaces": ns})
}
