//! Layers run one way: no import cycle between two modules. The test reads the sources
//! (comments and string literals removed), takes every `crate::` path and every `super::` path
//! that climbs to the crate root, and builds the dependency graph of
//!
//! * the library's top-level modules (`src/X.rs` or `src/X/`; the root's re-exports such as
//!   `crate::Error` count as the module they come from), and
//! * the files of each command-line binary (`src/bin/NAME/FILE.rs`, one node per file; a
//!   module of the binary's root file counts as that file).
//!
//! Every strongly connected component of more than one node is a cycle; the test names it with
//! a path around it and one source line per step, so it can be cut where it is cheapest.

use crate::support;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles that are known and being removed, each as the set of its nodes (library modules by
/// name, binary files as `NAME/FILE`). The test fails on any other cycle, and on an entry
/// here that is no longer a cycle, so the list only shrinks. Empty it as the cycles go.
const KNOWN_CYCLES: &[&[&str]] = &[];

/// Where a dependency was seen: file and line.
type Site = (PathBuf, usize);

/// A dependency graph: for each node, the nodes it uses and the first place it uses each.
type Graph = BTreeMap<String, BTreeMap<String, Site>>;

/// `text` with comments and the contents of string and character literals blanked out
/// (newlines kept, so line numbers stay right).
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r' && matches!(next, Some('#') | Some('"')) && !ident_before(&c, i) {
            // A raw string: r"..." or r#"..."# with any number of hashes.
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            let hashes = j - i - 1;
            i = j + 1;
            while i < c.len() {
                if c[i] == '"' && (0..hashes).all(|h| c.get(i + 1 + h) == Some(&'#')) {
                    i += 1 + hashes;
                    break;
                }
                blank(&mut out, c[i]);
                i += 1;
            }
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if i < c.len() {
                    blank(&mut out, c[i]);
                }
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && (next == Some('\\') || c.get(i + 2) == Some(&'\'')) {
            // A character literal ('x' or '\n'); a lifetime ('a) is left as it is.
            i += 1;
            while i < c.len() && c[i] != '\'' {
                if c[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Whether the character before `i` continues an identifier.
fn ident_before(c: &[char], i: usize) -> bool {
    i > 0 && (c[i - 1].is_alphanumeric() || c[i - 1] == '_')
}

/// The identifier starting at `i` (after spaces), and the index after it.
fn ident_at(c: &[char], mut i: usize) -> (String, usize) {
    while i < c.len() && c[i].is_whitespace() {
        i += 1;
    }
    let start = i;
    while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
        i += 1;
    }
    (c[start..i].iter().collect(), i)
}

/// The first segments below the crate root of the paths in `code` (comments and strings
/// removed), with their line numbers, for a file `depth` modules below the root: `crate::a::x`
/// gives `a`, `crate::{a, b::c}` gives `a` and `b`, `super::a` gives `a` when its `super`s
/// climb to the root, and in the root file itself (`depth` 0) every path's first segment.
fn root_segments(code: &str, depth: usize) -> Vec<(String, usize)> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let line_of = |i: usize| c[..i].iter().filter(|&&ch| ch == '\n').count() + 1;
    let path_sep = |j: usize| c.get(j..j + 2) == Some(&[':', ':'][..]);
    let mut i = 0;
    while i < c.len() {
        let starts_ident = (c[i].is_alphabetic() || c[i] == '_') && !ident_before(&c, i);
        if !starts_ident || (i >= 2 && path_sep(i - 2)) {
            i += 1;
            continue;
        }
        let (word, mut j) = ident_at(&c, i);
        if !path_sep(j) {
            i = j;
            continue;
        }
        let climbs = match word.as_str() {
            "crate" => true,
            "super" => {
                let mut supers = 1;
                while path_sep(j) && ident_at(&c, j + 2).0 == "super" {
                    supers += 1;
                    j = ident_at(&c, j + 2).1;
                }
                supers >= depth && path_sep(j)
            }
            _ if depth == 0 => {
                out.push((word, line_of(i)));
                i = j;
                continue;
            }
            _ => false,
        };
        if !climbs {
            i = j;
            continue;
        }
        j += 2;
        while j < c.len() && c[j].is_whitespace() {
            j += 1;
        }
        if c.get(j) == Some(&'{') {
            // A group: the first segment of each item at the group's own level.
            let mut level = 0;
            let mut at_item = true;
            while j < c.len() {
                match c[j] {
                    '{' => {
                        level += 1;
                        at_item = level == 1;
                    }
                    '}' => {
                        level -= 1;
                        if level == 0 {
                            break;
                        }
                    }
                    ',' if level == 1 => at_item = true,
                    ch if at_item && (ch.is_alphanumeric() || ch == '_') => {
                        let (name, end) = ident_at(&c, j);
                        out.push((name, line_of(j)));
                        at_item = false;
                        j = end;
                        continue;
                    }
                    _ => {}
                }
                j += 1;
            }
        } else {
            let (name, end) = ident_at(&c, j);
            if !name.is_empty() {
                out.push((name, line_of(j)));
            }
            j = end;
        }
        i = j.max(i + 1);
    }
    out
}

/// How many modules below its crate's root the file at `rel` (relative to the crate's root
/// folder) sits: `a.rs` and `a/mod.rs` are 1, `a/b.rs` is 2.
fn depth(rel: &Path) -> usize {
    let parts = rel.components().count();
    if rel.file_name().is_some_and(|f| f == "mod.rs") {
        parts - 1
    } else {
        parts
    }
}

/// The node of each root item a crate's root file declares or re-exports: `mod a;` is `a`,
/// `pub use a::{B, C};` maps `B` and `C` to `a`, and an item defined in the root file belongs
/// to `root`.
fn root_items(root_file: &Path, root: &str) -> BTreeMap<String, String> {
    let code = code_only(&std::fs::read_to_string(root_file).expect("read the crate root"));
    // One statement a line: a `use` may span several.
    let mut statements: Vec<String> = Vec::new();
    let mut open = false;
    for line in code.lines().map(str::trim) {
        match statements.last_mut() {
            Some(last) if open => last.push_str(line),
            _ => statements.push(line.to_string()),
        }
        let last = statements.last().expect("just pushed");
        open = last.starts_with("use ") || last.starts_with("pub use ");
        open &= !last.ends_with(';');
    }
    let mut modules = BTreeMap::new();
    let mut reexports = BTreeMap::new();
    for statement in &statements {
        let statement = statement.strip_prefix("pub ").unwrap_or(statement);
        if let Some(name) = statement
            .strip_prefix("mod ")
            .and_then(|l| l.strip_suffix(';'))
        {
            modules.insert(name.trim().to_string(), name.trim().to_string());
        } else if let Some(rest) = statement.strip_prefix("use ") {
            let (module, names) = rest.split_once("::").unwrap_or((rest, ""));
            for name in names.trim_end_matches(';').split([',', '{', '}']) {
                let name = name.split(" as ").last().unwrap_or("").trim();
                if !name.is_empty() && !name.contains("::") {
                    reexports.insert(name.to_string(), module.to_string());
                }
            }
        } else {
            for keyword in [
                "fn ", "struct ", "enum ", "const ", "static ", "type ", "trait ",
            ] {
                if let Some(rest) = statement.strip_prefix(keyword) {
                    let (name, _) = ident_at(&rest.chars().collect::<Vec<_>>(), 0);
                    reexports.insert(name, root.to_string());
                }
            }
        }
    }
    for (name, module) in reexports {
        if module == root || modules.contains_key(&module) {
            modules.entry(name).or_insert(module);
        }
    }
    modules
}

/// The dependency graph of one crate whose root file is `dir/root_file`: a node per top-level
/// module, named `prefix` + module; the root file itself is the node `prefix` + `root`.
fn crate_graph(dir: &Path, root_file: &str, prefix: &str, graph: &mut Graph) {
    let root = root_file.trim_end_matches(".rs");
    let items = root_items(&dir.join(root_file), root);
    for file in support::rust_files(dir) {
        let rel = file.strip_prefix(dir).expect("below the crate folder");
        if rel.starts_with("bin") {
            continue;
        }
        let first = rel.components().next().expect("a file has a name");
        let node = first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        let below = if node == root { 0 } else { depth(rel) };
        let code = code_only(&std::fs::read_to_string(&file).expect("read a source file"));
        let from = format!("{prefix}{node}");
        let uses = graph.entry(from.clone()).or_default();
        for (segment, line) in root_segments(&code, below) {
            let Some(target) = items.get(&segment) else {
                continue;
            };
            let to = format!("{prefix}{target}");
            if to != from {
                uses.entry(to).or_insert_with(|| (file.clone(), line));
            }
        }
    }
}

/// The library's graph and every binary's under `src/bin/NAME/`.
fn project_graph(src: &Path) -> Graph {
    let mut graph = Graph::new();
    crate_graph(src, "lib.rs", "", &mut graph);
    graph.remove("lib");
    for (_, uses) in graph.iter_mut() {
        uses.remove("lib");
    }
    let bin = src.join("bin");
    if let Ok(entries) = std::fs::read_dir(&bin) {
        for entry in entries {
            let dir = entry.expect("directory entry").path();
            if dir.join("main.rs").exists() {
                let name = dir
                    .file_name()
                    .expect("named")
                    .to_string_lossy()
                    .to_string();
                crate_graph(&dir, "main.rs", &format!("{name}/"), &mut graph);
            }
        }
    }
    graph
}

/// The strongly connected components of more than one node (Tarjan 1972), each sorted.
fn cycles(graph: &Graph) -> Vec<BTreeSet<String>> {
    struct Walk<'a> {
        graph: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<BTreeSet<String>>,
    }
    fn visit<'a>(w: &mut Walk<'a>, v: &'a str) {
        let i = w.index.len();
        w.index.insert(v, i);
        w.low.insert(v, i);
        w.stack.push(v);
        w.on_stack.insert(v);
        let graph = w.graph;
        for to in graph.get(v).into_iter().flat_map(|u| u.keys()) {
            let to = to.as_str();
            if !w.index.contains_key(to) {
                visit(w, to);
                let low = w.low[v].min(w.low[to]);
                w.low.insert(v, low);
            } else if w.on_stack.contains(to) {
                let low = w.low[v].min(w.index[to]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut component = BTreeSet::new();
            while let Some(u) = w.stack.pop() {
                w.on_stack.remove(u);
                component.insert(u.to_string());
                if u == v {
                    break;
                }
            }
            if component.len() > 1 {
                w.out.push(component);
            }
        }
    }
    let mut w = Walk {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !w.index.contains_key(v.as_str()) {
            visit(&mut w, v);
        }
    }
    w.out.sort();
    w.out
}

/// One closed path through `component` (breadth-first from its first node back to it), each
/// step with the line that makes it: `a -> b (src/a.rs:3) -> a (src/b/mod.rs:9)`.
fn describe(graph: &Graph, component: &BTreeSet<String>, base: &Path) -> String {
    let start = component.iter().next().expect("non-empty");
    let mut parent: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start.as_str()]);
    let mut last = None;
    'search: while let Some(v) = queue.pop_front() {
        for to in graph[v].keys().filter(|t| component.contains(*t)) {
            if to == start {
                last = Some(v);
                break 'search;
            }
            if !parent.contains_key(to.as_str()) {
                parent.insert(to, v);
                queue.push_back(to);
            }
        }
    }
    let mut back = Vec::new();
    let mut v = last.expect("a component of a cycle leads back to its start");
    while v != start {
        back.push(v);
        v = parent[v];
    }
    let mut path = vec![start.as_str()];
    path.extend(back.into_iter().rev());
    path.push(start);
    let mut text = start.clone();
    for pair in path.windows(2) {
        let (file, line) = &graph[pair[0]][pair[1]];
        let file = file.strip_prefix(base).unwrap_or(file).display();
        text += &format!(" -> {} ({file}:{line})", pair[1]);
    }
    text
}

/// The cycles of `graph` that `known` does not list, and the entries of `known` that are no
/// longer cycles.
fn check(graph: &Graph, known: &[&[&str]], base: &Path) -> Vec<String> {
    let found = cycles(graph);
    let known: Vec<BTreeSet<String>> = known
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let mut problems: Vec<String> = found
        .iter()
        .filter(|c| !known.contains(c))
        .map(|c| {
            let members: Vec<&str> = c.iter().map(String::as_str).collect();
            format!(
                "import cycle among {members:?}, e.g. {}",
                describe(graph, c, base)
            )
        })
        .collect();
    problems.extend(known.iter().filter(|c| !found.contains(c)).map(|c| {
        format!("{c:?} is no longer a cycle: remove it from KNOWN_CYCLES in tests/layering.rs")
    }));
    problems
}

#[test]
fn no_import_cycle_between_modules() {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let graph = project_graph(&base.join("src"));
    for module in ["sampler", "tree", "data", "prior", "kernel"] {
        assert!(
            graph.contains_key(module),
            "the graph misses module {module}"
        );
    }
    let problems = check(&graph, KNOWN_CYCLES, base);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_check_finds_and_names_a_cycle() {
    let scratch = std::env::temp_dir().join(format!("nrmm-layering-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    let write = |name: &str, text: &str| {
        let path = scratch.join(name);
        std::fs::create_dir_all(path.parent().expect("has a folder")).expect("create folders");
        std::fs::write(path, text).expect("write");
    };
    write(
        "lib.rs",
        "pub mod low;\npub mod mid;\npub mod top;\npub use low::Thing;\n",
    );
    write(
        "low.rs",
        "// crate::top in a comment is no dependency\npub struct Thing;\n",
    );
    write("mid/mod.rs", "use crate::{low::Thing, top};\nmod inner;\n");
    write(
        "mid/inner.rs",
        "fn f() -> &'static str { \"crate::low\" }\nfn g() { super::super::low::h() }\n",
    );
    write("top.rs", "use crate::Thing;\nfn f() { crate::mid::g(); }\n");
    write(
        "bin/tool/main.rs",
        "mod a;\nmod b;\nfn main() { a::run() }\n",
    );
    write("bin/tool/a.rs", "use crate::b::x;\npub fn run() {}\n");
    write("bin/tool/b.rs", "pub fn x() { super::a::run() }\n");
    let graph = project_graph(&scratch);
    let keys = |node: &str| graph[node].keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys("low"), Vec::<String>::new());
    assert_eq!(keys("mid"), ["low", "top"]);
    assert_eq!(keys("top"), ["low", "mid"]);
    assert_eq!(keys("tool/main"), ["tool/a"]);
    assert_eq!(keys("tool/a"), ["tool/b"]);
    assert_eq!(keys("tool/b"), ["tool/a"]);
    let problems = check(&graph, &[&["tool/a", "tool/b"], &["low", "top"]], &scratch);
    std::fs::remove_dir_all(&scratch).expect("remove the scratch tree");
    assert_eq!(
        problems,
        [
            "import cycle among [\"mid\", \"top\"], e.g. mid -> top (mid/mod.rs:1) -> mid \
             (top.rs:2)",
            "{\"low\", \"top\"} is no longer a cycle: remove it from KNOWN_CYCLES in \
             tests/layering.rs",
        ]
    );
}
