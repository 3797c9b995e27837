// Package migrations reads the numbered schema steps a SQL job store
// embeds (migrations/NNNN_name.sql), for sqlitequeue and pgqueue alike.
package migrations

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema step.
type Migration struct {
	Version int    // NNNN of the file name
	Name    string // the file name
	SQL     string // the file's text
}

// Load reads every file of dir in fsys as a migration, by version. owner
// (a package name) prefixes its errors. Two files with one number are an
// error: the second would stay unapplied on every database already at
// that version.
func Load(fsys fs.ReadDirFS, dir, owner string) ([]Migration, error) {
	entries, err := fsys.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: bad migration file name %q", owner, e.Name())
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			return nil, fmt.Errorf("%s: migrations %s and %s share version %d", owner, out[i-1].Name, out[i].Name, out[i].Version)
		}
	}
	return out, nil
}

// Latest is the highest version of ms, or 0 for none.
func Latest(ms []Migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].Version
}
