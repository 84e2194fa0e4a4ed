package leasehold_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/architecture.md names every package under internal/ (as
// `internal/...`), and every internal/ path it names exists: the page a
// newcomer reads first stays true as packages come and go.
func TestArchitectureNamesEveryPackage(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir("internal", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if d.Name() == "testdata" {
			return filepath.SkipDir
		}
		goFiles, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(goFiles) > 0 && !strings.Contains(string(page), "`"+filepath.ToSlash(path)+"`") {
			t.Errorf("docs/architecture.md does not name the package `%s`", filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range regexp.MustCompile(`internal/[a-z0-9_/.]*[a-z0-9_]`).FindAllString(string(page), -1) {
		if _, err := os.Stat(filepath.FromSlash(path)); err != nil {
			t.Errorf("docs/architecture.md names %s, which does not exist", path)
		}
	}
}
