package loader

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unicode/utf8"

	"github.com/beam-agents/toolreg"
	"github.com/beam-agents/toolreg/internal/editdist"
	"github.com/beam-agents/toolreg/internal/par"
)

// MaxFileSize is the largest manifest file the loader reads: 1 MiB. A
// manifest is a few kilobytes; anything this large is refused, unread.
const MaxFileSize = 1 << 20

// Load reads the manifests at paths, files or directories (searched
// recursively for .yaml, .yml and .cue files), validates each against
// schema.cue and returns their tools: files in sorted path order, each file's
// tools in the order it declares them.
//
// When any manifest is invalid, Load returns no specs and an error that lists
// every problem of every file: a *toolreg.ToolDefinitionError. A tool name
// declared twice gives a *toolreg.DuplicateToolError naming both places; when
// there are both kinds, the error joins them (find each with errors.As).
func Load(paths ...string) ([]*toolreg.Spec, error) {
	return load(osSource{realRoots: new(sync.Map)}, paths)
}

// LoadFS is Load reading from fsys; paths are fs.FS paths ("manifests",
// "manifests/refund.yaml"), and positions in errors name files by them.
func LoadFS(fsys fs.FS, paths ...string) ([]*toolreg.Spec, error) {
	return load(fsSource{fsys}, paths)
}

// source is the file system Load and LoadFS read.
type source interface {
	stat(name string) (fs.FileInfo, error)
	readDir(name string) ([]fs.DirEntry, error)
	// open opens a regular file, and refuses anything else (a FIFO, a
	// device) with errNotRegular, without blocking on it.
	open(name string) (io.ReadCloser, error)
	join(dir, name string) string
	valid(name string) bool
	// within reports whether name, its symbolic links followed, is inside
	// root (a directory, or for a file named alone, the file's directory).
	within(name, root string) bool
}

// errNotRegular refuses a file that is not a regular file.
var errNotRegular = errors.New("not a regular file")

// osSource reads the operating system's files. realRoots holds each root
// with its links followed, found once per Load rather than once per file.
type osSource struct{ realRoots *sync.Map }

func (osSource) stat(name string) (fs.FileInfo, error)      { return os.Stat(name) }
func (osSource) readDir(name string) ([]fs.DirEntry, error) { return os.ReadDir(name) }

func (osSource) open(name string) (io.ReadCloser, error) {
	// Non-blocking, so that opening a FIFO returns at once; the check that
	// follows is on the file opened, so a file swapped in between cannot
	// slip through.
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%w (%s)", errNotRegular, fileKind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return sizedFile{f, fi.Size()}, nil
}

// sizedFile is an open file with the size it had when opened, so that read
// allocates its buffer once, as os.ReadFile does.
type sizedFile struct {
	*os.File
	n int64
}

func (f sizedFile) size() int64 { return f.n }

func (s osSource) within(name, root string) bool {
	// A file directly in root that is not itself a link is in root, with
	// one lstat rather than one for each directory of its path.
	if dir, base := filepath.Split(name); base != "." && base != ".." && filepath.Clean(dir) == filepath.Clean(root) {
		if fi, err := os.Lstat(name); err == nil && fi.Mode()&fs.ModeSymlink == 0 {
			return true
		}
	}
	real, err := filepath.EvalSymlinks(name)
	if err != nil {
		return true // open reports it
	}
	realRoot, err := s.realRoot(root)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(realRoot, real)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}

func (s osSource) realRoot(root string) (string, error) {
	if r, ok := s.realRoots.Load(root); ok {
		return r.(string), nil
	}
	r, err := filepath.EvalSymlinks(root)
	if err == nil {
		s.realRoots.Store(root, r)
	}
	return r, err
}

// fileKind names the kind of a file that is not regular.
func fileKind(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m.IsDir():
		return "a directory"
	}
	return "mode " + m.String()
}
func (osSource) join(dir, name string) string {
	// Not filepath.Join, which cleans: a file is named as its directory was
	// given (./manifests/a.yaml stays so).
	if strings.HasSuffix(dir, string(filepath.Separator)) || strings.HasSuffix(dir, "/") {
		return dir + name
	}
	return dir + string(filepath.Separator) + name
}
func (osSource) valid(name string) bool { return name != "" }

type fsSource struct{ fsys fs.FS }

func (s fsSource) stat(name string) (fs.FileInfo, error)      { return fs.Stat(s.fsys, name) }
func (s fsSource) readDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(s.fsys, name) }
func (fsSource) join(dir, name string) string                 { return path.Join(dir, name) }
func (fsSource) valid(name string) bool                       { return fs.ValidPath(name) }

func (s fsSource) open(name string) (io.ReadCloser, error) {
	fi, err := fs.Stat(s.fsys, name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w (%s)", errNotRegular, fileKind(fi.Mode()))
	}
	return s.fsys.Open(name)
}

// within follows name's links where the file system tells them
// (fs.ReadLinkFS, which os.DirFS is): a link must stay inside root.
func (s fsSource) within(name, root string) bool {
	rl, ok := s.fsys.(fs.ReadLinkFS)
	if !ok {
		return true
	}
	cur := name
	for range 40 {
		fi, err := rl.Lstat(cur)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			break
		}
		target, err := rl.ReadLink(cur)
		if err != nil || path.IsAbs(target) || filepath.IsAbs(target) {
			return false
		}
		cur = path.Join(path.Dir(cur), target)
		if !fs.ValidPath(cur) {
			return false
		}
	}
	return root == "." || cur == root || strings.HasPrefix(cur, root+"/")
}

func isManifest(name string) bool {
	switch path.Ext(filepath.ToSlash(name)) {
	case ".yaml", ".yml", ".cue":
		return true
	}
	return false
}

// collect expands paths into the sorted, de-duplicated manifest files they
// name. A path that does not exist, or a file that is no manifest, is a problem.
//
// roots maps each file to the root it was found under: the directory given,
// or for a file given alone, its own directory.
func collect(src source, paths []string) (files []string, roots map[string]string, ps []toolreg.Problem) {
	roots = map[string]string{}
	var walk func(dir, root string)
	walk = func(dir, root string) {
		entries, err := src.readDir(dir)
		if err != nil {
			ps = append(ps, toolreg.Problem{Pos: toolreg.Pos{File: dir}, Message: fmt.Sprintf("cannot read directory: %v", unwrapPathError(err))})
			return
		}
		for _, e := range entries {
			name := src.join(dir, e.Name())
			switch {
			case e.IsDir():
				// Hidden directories (.git) and cue.mod hold no manifests.
				if !strings.HasPrefix(e.Name(), ".") && e.Name() != "cue.mod" {
					walk(name, root)
				}
			case isManifest(e.Name()) && !strings.HasPrefix(e.Name(), "."):
				// A symlink to a directory is not followed: it could loop.
				if e.Type()&fs.ModeSymlink != 0 {
					if fi, err := src.stat(name); err != nil || fi.IsDir() {
						continue
					}
				}
				files = append(files, name)
				roots[name] = root
			}
		}
	}
	for _, p := range paths {
		if !src.valid(p) {
			ps = append(ps, toolreg.Problem{Pos: toolreg.Pos{File: p}, Message: "invalid path: use a slash-separated path relative to the file system's root, such as manifests/refund.yaml"})
			continue
		}
		fi, err := src.stat(p)
		switch {
		case err != nil:
			ps = append(ps, toolreg.Problem{Pos: toolreg.Pos{File: p}, Message: fmt.Sprintf("cannot read: %v", unwrapPathError(err))})
		case fi.IsDir():
			walk(p, p)
		case !isManifest(p):
			ps = append(ps, toolreg.Problem{Pos: toolreg.Pos{File: p}, Message: "not a manifest: a manifest file ends in .yaml, .yml or .cue"})
		default:
			files = append(files, p)
			if _, ok := roots[p]; !ok {
				roots[p] = filepath.Dir(p)
				if _, isFS := src.(fsSource); isFS {
					roots[p] = path.Dir(p)
				}
			}
		}
	}
	// Sorted and without repeats, however each was spelt (manifests and
	// ./manifests/a.yaml): a file named twice is read once.
	slices.SortStableFunc(files, func(a, b string) int {
		return cmp.Compare(filepath.ToSlash(filepath.Clean(a)), filepath.ToSlash(filepath.Clean(b)))
	})
	files = slices.CompactFunc(files, func(a, b string) bool { return filepath.Clean(a) == filepath.Clean(b) })
	return files, roots, ps
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// read returns the file's bytes, refusing one over MaxFileSize or not text,
// one that is not a regular file, and a link that leads out of root.
func read(src source, name, root string) ([]byte, *toolreg.Problem) {
	fail := func(format string, args ...any) ([]byte, *toolreg.Problem) {
		return nil, &toolreg.Problem{Pos: toolreg.Pos{File: name}, Message: fmt.Sprintf(format, args...)}
	}
	if !src.within(name, root) {
		return fail("symbolic link to a file outside %s: refused, so that a manifest cannot make the loader read, and print, a file elsewhere; put the manifest itself in the tree", root)
	}
	f, err := src.open(name)
	if errors.Is(err, errNotRegular) {
		return fail("%v: a manifest is a regular file; remove this one or rename it", unwrapPathError(err))
	}
	if err != nil {
		return fail("cannot read: %v", unwrapPathError(err))
	}
	defer f.Close()
	b, err := readAll(f)
	if err != nil {
		return fail("cannot read: %v", unwrapPathError(err))
	}
	if len(b) > MaxFileSize {
		return fail("file is over the %d-byte (1 MiB) limit for a manifest: split it, or check it is the file you meant", MaxFileSize)
	}
	if off, bad := firstNonText(b); bad {
		line, col := lineCol(b, off)
		return nil, &toolreg.Problem{Pos: toolreg.Pos{File: name, Line: line, Col: col},
			Message: fmt.Sprintf("file is not UTF-8 text (byte 0x%02x at offset %d): a manifest is YAML or CUE text; save it as UTF-8", b[off], off)}
	}
	return b, nil
}

// readAll reads f to its end, or to one byte past MaxFileSize.
func readAll(f io.Reader) ([]byte, error) {
	r := io.LimitReader(f, MaxFileSize+1)
	sf, ok := f.(interface{ size() int64 })
	if !ok || sf.size() <= 0 || sf.size() > MaxFileSize {
		return io.ReadAll(r)
	}
	// One byte more than the size, so that the read that finds the end
	// needs no larger buffer; a file that grew meanwhile is read on.
	b := make([]byte, 0, sf.size()+1)
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // grow, as io.ReadAll does
		}
	}
}

// firstNonText returns the offset of the first byte of b that is not part of
// UTF-8 text: an invalid sequence or a NUL.
func firstNonText(b []byte) (int, bool) {
	if utf8.Valid(b) && bytes.IndexByte(b, 0) < 0 {
		return 0, false // the common case, without decoding rune by rune
	}
	for off := 0; off < len(b); {
		r, n := utf8.DecodeRune(b[off:])
		if r == utf8.RuneError && n <= 1 || r == 0 {
			return off, true
		}
		off += n
	}
	return 0, false
}

// lineCol returns the 1-based line and column of offset off in b; the column
// counts characters, as YAML's positions do.
func lineCol(b []byte, off int) (line, col int) {
	start := bytes.LastIndexByte(b[:off], '\n') + 1
	return bytes.Count(b[:off], []byte{'\n'}) + 1, utf8.RuneCount(b[start:off]) + 1
}

// found is one tool found by the loader, with what orders it.
type found struct {
	spec *toolreg.Spec
	file int  // index of the file in sorted order
	doc  int  // YAML document index; for CUE, 0
	ok   bool // the tool has no problem
	// named: the tool's name is valid, so it takes part in the check for
	// duplicates even when the tool has problems of its own.
	named bool
	// scopePos is where each of spec.Scopes is written.
	scopePos []toolreg.Pos
}

// unit is the work of one YAML file (read, parse, check) or one CUE package
// (check), done in parallel with the others; its results are written in place.
type unit struct {
	files []int // indexes into the sorted files; one for YAML, a package's for CUE
	cue   []*cueFile
	// scopes are the scopes a CUE package declares (schema.cue's scopes),
	// with where each is declared.
	scopes map[string]toolreg.Pos

	tools []found
	probs []toolreg.Problem
	dups  []error // tools two files of one CUE package both declare
}

func load(src source, paths []string) ([]*toolreg.Spec, error) {
	files, roots, probs := collect(src, paths)
	index := make(map[string]int, len(files))
	for i, f := range files {
		index[f] = i
	}

	// Read and split the work: each YAML file is a unit; the CUE files of one
	// directory form one CUE package, one unit.
	var units []*unit
	cuePkgs := map[string]*unit{}
	broken := map[string]bool{} // directories with a CUE file that did not parse
	for i, name := range files {
		if path.Ext(filepath.ToSlash(name)) != ".cue" {
			units = append(units, &unit{files: []int{i}}) // read in parallel
			continue
		}
		b, p := read(src, name, roots[name])
		if p != nil {
			probs = append(probs, *p)
			continue
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			probs = append(probs, toolreg.Problem{Pos: toolreg.Pos{File: name}, Message: "empty file: a CUE manifest declares tools under `tools` in package " + schemaPackage})
			continue
		}
		f, ps := parseCUE(name, b)
		if ps != nil {
			probs = append(probs, ps...)
			broken[filepath.Dir(name)] = true
			continue
		}
		dir := filepath.Dir(name)
		u := cuePkgs[dir]
		if u == nil {
			u = &unit{}
			cuePkgs[dir] = u
			units = append(units, u)
		}
		u.files = append(u.files, i)
		u.cue = append(u.cue, f)
	}

	// A package missing one of its files would report what that file
	// defines as missing: its parse errors say enough.
	units = slices.DeleteFunc(units, func(u *unit) bool {
		return u.cue != nil && broken[filepath.Dir(u.cue[0].name)]
	})

	c := &checker{}
	par.Do(len(units), func(i int) {
		u := units[i]
		defer func() {
			// A bug in the loader, or in CUE, must not take the caller down
			// with it: it becomes a problem of the file that set it off.
			if v := recover(); v != nil {
				u.tools = nil
				u.probs = append(u.probs, toolreg.Problem{Pos: toolreg.Pos{File: files[u.files[0]]},
					Message: fmt.Sprintf("internal error checking this file (please report it): %v", v)})
			}
		}()
		if u.cue != nil {
			u.loadCUE(c, index)
		} else {
			u.loadYAML(c, src, files[u.files[0]], roots[files[u.files[0]]])
		}
	})

	var all []found
	var dups []error
	var declared map[string]toolreg.Pos
	for _, u := range units {
		all = append(all, u.tools...)
		probs = append(probs, u.probs...)
		dups = append(dups, u.dups...)
		for name, pos := range u.scopes {
			if declared == nil {
				declared = map[string]toolreg.Pos{}
			}
			if _, ok := declared[name]; !ok {
				declared[name] = pos
			}
		}
	}
	if declared != nil {
		probs = append(probs, undeclaredScopes(all, declared)...)
	}
	slices.SortStableFunc(all, func(a, b found) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.doc, b.doc),
			cmp.Compare(a.spec.Pos.Line, b.spec.Pos.Line), cmp.Compare(a.spec.Pos.Col, b.spec.Pos.Col))
	})

	var errs []error
	for i := range probs {
		probs[i] = shorten(probs[i])
	}
	if len(probs) > 0 {
		slices.SortStableFunc(probs, func(a, b toolreg.Problem) int {
			return cmp.Or(cmp.Compare(fileOrder(index, a.Pos.File), fileOrder(index, b.Pos.File)),
				cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Pos.Col, b.Pos.Col),
				cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Tool, b.Tool), cmp.Compare(a.Path, b.Path), cmp.Compare(a.Message, b.Message))
		})
		// Each once: two routes to one finding (CUE reporting a value
		// through two paths of the schema) give one line.
		said := make(map[string]bool, len(probs))
		probs = slices.DeleteFunc(probs, func(p toolreg.Problem) bool {
			s := p.String()
			dup := said[s]
			said[s] = true
			return dup
		})
		errs = append(errs, &toolreg.ToolDefinitionError{Problems: probs})
	}
	errs = append(errs, dups...)
	first := make(map[string]*toolreg.Spec, len(all))
	specs := make([]*toolreg.Spec, 0, len(all))
	for _, f := range all {
		if !f.named {
			continue
		}
		if prev, ok := first[f.spec.Name]; ok {
			errs = append(errs, &toolreg.DuplicateToolError{Name: f.spec.Name, First: prev.Pos, Second: f.spec.Pos})
			continue
		}
		first[f.spec.Name] = f.spec
		if f.ok {
			specs = append(specs, f.spec)
		}
	}
	switch len(errs) {
	case 0:
		return specs, nil
	case 1:
		return nil, errs[0]
	}
	return nil, errors.Join(errs...)
}

// fileOrder sorts problems of files the loader read by the files' order, and
// others (such as a path that does not exist) first.
func fileOrder(index map[string]int, file string) int {
	if i, ok := index[file]; ok {
		return i
	}
	return -1
}

func (u *unit) loadYAML(c *checker, src source, name, root string) {
	b, p := read(src, name, root)
	if p != nil {
		u.probs = append(u.probs, *p)
		return
	}
	for _, d := range parseYAML(name, b) {
		u.probs = append(u.probs, d.probs...)
		if d.root == nil {
			continue
		}
		// The schema's problems and the loader's own rules, together: the
		// rules are checked on every part of the tool the schema did not
		// refuse, so that one run shows both.
		ps := checkYAMLTool(c, d.root, d.probs)
		s := decodeSpec(d.root)
		ps = append(ps, c.checkSpec(s, d.root, ps)...)
		u.probs = append(u.probs, ps...)
		u.tools = append(u.tools, found{spec: s, file: u.files[0], doc: d.index,
			ok: len(ps) == 0 && len(d.probs) == 0, named: named(s, ps), scopePos: scopePositions(s, d.root)})
	}
}

// named reports whether a tool's name is one to check for duplicates: a
// valid name the schema did not refuse.
func named(s *toolreg.Spec, ps []toolreg.Problem) bool {
	if !toolreg.ValidName(s.Name) {
		return false
	}
	for _, p := range ps {
		if p.Path == "name" {
			return false
		}
	}
	return true
}

// scopePositions returns where each of s.Scopes is written in tree.
func scopePositions(s *toolreg.Spec, tree *node) []toolreg.Pos {
	if len(s.Scopes) == 0 {
		return nil
	}
	out := make([]toolreg.Pos, len(s.Scopes))
	for i := range s.Scopes {
		_, out[i] = tree.lookup([]string{"scopes", strconv.Itoa(i)})
	}
	return out
}

// undeclaredScopes refuses the scopes of tools that the manifest set does
// not declare, when it declares any (schema.cue's scopes): a misspelt scope
// would lock every caller out of its tool, or, granted by mistake under the
// misspelt name, let the wrong ones in.
func undeclaredScopes(all []found, declared map[string]toolreg.Pos) []toolreg.Problem {
	names := slices.Sorted(maps.Keys(declared))
	first := declared[names[0]]
	for _, p := range declared {
		if p.File < first.File || p.File == first.File && (p.Line < first.Line || p.Line == first.Line && p.Col < first.Col) {
			first = p
		}
	}
	var ps []toolreg.Problem
	for _, f := range all {
		for i, sc := range f.spec.Scopes {
			if _, ok := declared[sc]; ok || !toolreg.ValidScope(sc) {
				continue
			}
			pos := f.spec.Pos
			if i < len(f.scopePos) && f.scopePos[i].IsValid() {
				pos = f.scopePos[i]
			}
			hint := ""
			if near := nearest(sc, names); near != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", near)
			}
			ps = append(ps, toolreg.Problem{Pos: pos, Tool: f.spec.Name, Path: "scopes." + strconv.Itoa(i),
				Message: fmt.Sprintf("unknown scope %q%s: this manifest set declares its scopes (under scopes, as at %s), and not this one: declare it there, or fix the name", sc, hint, first)})
		}
	}
	return ps
}

// nearest returns the name of names closest to s, if one is close enough
// to be a typo of it.
func nearest(s string, names []string) string {
	best, bestD := "", max(1, len(s)/4)+1
	var rows []int
	for _, n := range names {
		var d int
		if d, rows = editdist.Levenshtein(s, n, rows); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}
