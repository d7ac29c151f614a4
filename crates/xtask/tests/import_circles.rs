//! No circle of imports between a crate's files: for every workspace crate
//! the files form a layered graph, where a file points at each file whose
//! items it names (`use` items and paths in code and macro bodies, through
//! `crate::`, `super::`, `self::` or a child module's name). `pub use`
//! re-exports are followed to the file that defines the item and are not
//! edges themselves: a facade is not a dependency. A parent that calls into
//! its child while the child names the parent's items is a circle; what
//! both need belongs in a module of its own. `#[cfg(test)]` modules are
//! left out: they sit above the code they test.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::visit::Visit;

fn root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .canonicalize()
        .expect("the workspace root")
}

/// A module path inside one crate (`[]` is the crate root).
type ModPath = Vec<String>;

struct Crate {
    src: PathBuf,
    /// module path -> file, from the file layout (`foo.rs` beside `foo/`,
    /// `mod.rs`, `lib.rs`/`main.rs` for the root).
    files: BTreeMap<ModPath, PathBuf>,
}

fn crates(root: &Path) -> Vec<Crate> {
    let mut srcs: Vec<PathBuf> = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .map(|e| e.expect("an entry").path().join("src"))
        .collect();
    srcs.push(root.join("python/src"));
    srcs.retain(|s| s.is_dir());
    srcs.sort();
    srcs.into_iter()
        .map(|src| {
            let mut files = BTreeMap::new();
            collect(&src, &src, &mut files);
            Crate { src, files }
        })
        .collect()
}

fn collect(src: &Path, dir: &Path, files: &mut BTreeMap<ModPath, PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("a source folder") {
        let path = entry.expect("an entry").path();
        if path.is_dir() {
            collect(src, &path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let rel = path
                .strip_prefix(src)
                .expect("under src")
                .with_extension("");
            let mut module: ModPath = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if module.last().is_some_and(|m| m == "mod") {
                module.pop();
            }
            if module == ["lib"] || module == ["main"] {
                module.clear();
            }
            files.insert(module, path);
        }
    }
}

/// What one file names: paths with the module scope they were written in
/// (inline `mod` blocks change what `super::` means), and its re-exports.
#[derive(Default)]
struct Names {
    paths: Vec<(ModPath, Vec<String>)>,
    reexports: BTreeMap<String, (ModPath, Vec<String>)>,
}

struct Walker<'a> {
    scope: ModPath,
    names: &'a mut Names,
}

fn use_tree_paths(
    tree: &syn::UseTree,
    prefix: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, String)>,
) {
    match tree {
        syn::UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            use_tree_paths(&p.tree, prefix, out);
            prefix.pop();
        }
        syn::UseTree::Name(n) => {
            let mut path = prefix.clone();
            path.push(n.ident.to_string());
            out.push((path, n.ident.to_string()));
        }
        syn::UseTree::Rename(r) => {
            let mut path = prefix.clone();
            path.push(r.ident.to_string());
            out.push((path, r.rename.to_string()));
        }
        syn::UseTree::Glob(_) => out.push((prefix.clone(), String::new())),
        syn::UseTree::Group(g) => {
            for t in &g.items {
                use_tree_paths(t, prefix, out);
            }
        }
    }
}

impl Walker<'_> {
    fn tokens(&mut self, tokens: &TokenStream) {
        let mut run: Vec<String> = Vec::new();
        let mut colons = 0;
        let flush = |run: &mut Vec<String>, names: &mut Names, scope: &ModPath| {
            if run.len() > 1 {
                names.paths.push((scope.clone(), std::mem::take(run)));
            }
            run.clear();
        };
        for tt in tokens.clone() {
            match tt {
                TokenTree::Ident(i) if run.is_empty() || colons == 2 => {
                    run.push(i.to_string());
                    colons = 0;
                }
                TokenTree::Punct(p) if p.as_char() == ':' && !run.is_empty() && colons < 2 => {
                    colons += 1;
                }
                TokenTree::Group(g) => {
                    flush(&mut run, self.names, &self.scope);
                    colons = 0;
                    self.tokens(&g.stream());
                }
                other => {
                    flush(&mut run, self.names, &self.scope);
                    colons = 0;
                    if let TokenTree::Ident(i) = other {
                        run.push(i.to_string());
                    }
                }
            }
        }
        flush(&mut run, self.names, &self.scope);
    }
}

impl<'ast> Visit<'ast> for Walker<'_> {
    fn visit_item_use(&mut self, item: &'ast syn::ItemUse) {
        let mut found = Vec::new();
        use_tree_paths(&item.tree, &mut Vec::new(), &mut found);
        let reexport = !matches!(item.vis, syn::Visibility::Inherited);
        for (path, name) in found {
            if reexport && !name.is_empty() {
                self.names
                    .reexports
                    .insert(name, (self.scope.clone(), path));
            } else if !reexport {
                self.names.paths.push((self.scope.clone(), path));
            }
        }
    }

    fn visit_item_mod(&mut self, item: &'ast syn::ItemMod) {
        if is_test_only(&item.attrs) {
            return;
        }
        self.scope.push(item.ident.to_string());
        syn::visit::visit_item_mod(self, item);
        self.scope.pop();
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        let segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        if segments.len() > 1 {
            self.names.paths.push((self.scope.clone(), segments));
        }
        syn::visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        self.tokens(&mac.tokens);
        syn::visit::visit_macro(self, mac);
    }
}

/// `#[cfg(test)]`: a unit-test module sits above the code it tests, like
/// an integration test, so what it names is not the file's dependency.
fn is_test_only(attrs: &[syn::Attribute]) -> bool {
    attrs.iter().any(|a| {
        a.path().is_ident("cfg") && a.parse_args::<syn::Ident>().is_ok_and(|i| i == "test")
    })
}

/// The file defining what `path`, written in `scope`, names; `None` for
/// another crate's item or a local one.
fn resolve(
    krate: &Crate,
    names: &BTreeMap<PathBuf, Names>,
    scope: &[String],
    path: &[String],
    depth: usize,
) -> Option<PathBuf> {
    let mut base: ModPath = scope.to_vec();
    let mut rest = path;
    match rest.first().map(String::as_str) {
        Some("crate") => {
            base.clear();
            rest = &rest[1..];
        }
        Some("super" | "self") => {
            while let Some(first) = rest.first() {
                match first.as_str() {
                    "super" => {
                        base.pop()?;
                    }
                    "self" => {}
                    _ => break,
                }
                rest = &rest[1..];
            }
        }
        Some(first) => {
            let mut child = base.clone();
            child.push(first.to_string());
            if !krate.files.contains_key(&child) {
                return None;
            }
        }
        None => return None,
    }
    let full: ModPath = base.into_iter().chain(rest.iter().cloned()).collect();
    // An inline module lives in its file's module: walk up to a file.
    let (module, file) = (0..=full.len())
        .rev()
        .find_map(|k| krate.files.get(&full[..k]).map(|f| (k, f)))?;
    let item = full.get(module);
    if let (Some(item), true) = (item, depth < 8) {
        if let Some((at, target)) = names.get(file).and_then(|n| n.reexports.get(item)) {
            let mut followed = target.clone();
            followed.extend(full[module + 1..].iter().cloned());
            if let Some(found) = resolve(krate, names, at, &followed, depth + 1) {
                return Some(found);
            }
        }
    }
    Some(file.clone())
}

/// Strongly connected components with more than one file (Tarjan).
fn circles(graph: &BTreeMap<PathBuf, BTreeSet<PathBuf>>) -> Vec<Vec<PathBuf>> {
    struct State<'g> {
        graph: &'g BTreeMap<PathBuf, BTreeSet<PathBuf>>,
        index: BTreeMap<&'g PathBuf, (usize, usize)>,
        stack: Vec<&'g PathBuf>,
        next: usize,
        found: Vec<Vec<PathBuf>>,
    }
    fn visit<'g>(s: &mut State<'g>, v: &'g PathBuf) {
        s.index.insert(v, (s.next, s.next));
        s.next += 1;
        s.stack.push(v);
        for w in &s.graph[v] {
            if !s.index.contains_key(w) {
                visit(s, w);
                let low = s.index[w].1.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            } else if s.stack.contains(&w) {
                let low = s.index[w].0.min(s.index[v].1);
                s.index.get_mut(v).expect("visited").1 = low;
            }
        }
        if s.index[v].0 == s.index[v].1 {
            let mut component = Vec::new();
            while let Some(w) = s.stack.pop() {
                component.push(w.clone());
                if w == v {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.found.push(component);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        stack: Vec::new(),
        next: 0,
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v) {
            visit(&mut s, v);
        }
    }
    s.found
}

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let root = root();
    let mut report = String::new();
    for krate in crates(&root) {
        let mut names = BTreeMap::new();
        for (module, file) in &krate.files {
            let text = std::fs::read_to_string(file).expect("a source file");
            let parsed = syn::parse_file(&text)
                .unwrap_or_else(|e| panic!("{} does not parse: {e}", file.display()));
            let mut found = Names::default();
            Walker {
                scope: module.clone(),
                names: &mut found,
            }
            .visit_file(&parsed);
            names.insert(file.clone(), found);
        }
        let mut graph: BTreeMap<PathBuf, BTreeSet<PathBuf>> = BTreeMap::new();
        for (file, found) in &names {
            let edges = graph.entry(file.clone()).or_default();
            for (scope, path) in &found.paths {
                if let Some(target) = resolve(&krate, &names, scope, path, 0) {
                    if &target != file {
                        edges.insert(target);
                    }
                }
            }
        }
        for circle in circles(&graph) {
            let show = |f: &PathBuf| {
                f.strip_prefix(&krate.src)
                    .unwrap_or(f)
                    .display()
                    .to_string()
            };
            report += &format!(
                "{}: a circle of {} files\n",
                krate
                    .src
                    .strip_prefix(&root)
                    .unwrap_or(&krate.src)
                    .display(),
                circle.len()
            );
            for file in &circle {
                let into: Vec<String> = graph[file]
                    .iter()
                    .filter(|t| circle.contains(t))
                    .map(show)
                    .collect();
                report += &format!("    {} -> {}\n", show(file), into.join(", "));
            }
        }
    }
    assert!(report.is_empty(), "files that import each other:\n{report}");
}
