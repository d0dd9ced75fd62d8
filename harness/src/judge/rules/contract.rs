//! The contract as compiled in, and its parser: the numbered rules of `CONTRACT.md` and the
//! problems that keep a normative sentence from being one.

use serde::Serialize;

/// The contract, as compiled into this harness.
pub const CONTRACT_TEXT: &str = include_str!("../../../CONTRACT.md");

/// A numbered rule as the contract states it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContractRule {
    pub id: String,
    /// The sentence(s) the tag closes, as plain text.
    pub text: String,
    /// 1-based line of the tag in `CONTRACT.md`.
    pub line: usize,
}

/// The numbered rules of the contract text, in order, or every problem found: a sentence with
/// MUST / MUST NOT / SHOULD and no rule number, a number used twice, a malformed tag.
pub fn contract_rules(text: &str) -> Result<Vec<ContractRule>, Vec<String>> {
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    for block in blocks(text) {
        // Sentences of the block, each with the tags that close it.
        let mut sentence = String::new();
        let mut chars = block.text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == '[' && block.text[i..].starts_with("[§") {
                let Some(end) = block.text[i..].find(']') else {
                    problems.push(format!("CONTRACT.md:{}: a rule tag `[§…` is not closed", block.line));
                    break;
                };
                let id = &block.text[i + 1..i + end];
                if !valid_id(id) {
                    problems
                        .push(format!("CONTRACT.md:{}: expected a rule tag like `[§4-3]`, found `[{id}]`", block.line));
                }
                let said = plain(&sentence);
                if !has_keyword(&said) {
                    problems.push(format!(
                        "CONTRACT.md:{}: rule {id} tags a sentence without MUST, MUST NOT or SHOULD: \"{said}\"",
                        block.line
                    ));
                }
                if rules.iter().any(|r: &ContractRule| r.id == id) {
                    problems.push(format!("CONTRACT.md:{}: rule {id} is numbered twice", block.line));
                }
                rules.push(ContractRule { id: id.to_owned(), text: said, line: block.line });
                sentence.clear();
                for _ in 0..block.text[i..i + end].chars().count() {
                    chars.next();
                }
                continue;
            }
            sentence.push(c);
            if ends_sentence(&block.text, i, c) {
                let said = plain(&sentence);
                if has_keyword(&said) {
                    problems.push(format!(
                        "CONTRACT.md:{}: a sentence with MUST / MUST NOT / SHOULD has no rule number `[§n-m]`: \"{said}\"",
                        block.line
                    ));
                }
                sentence.clear();
            }
        }
        let said = plain(&sentence);
        if has_keyword(&said) {
            problems.push(format!(
                "CONTRACT.md:{}: a sentence with MUST / MUST NOT / SHOULD has no rule number `[§n-m]`: \"{said}\"",
                block.line
            ));
        }
    }
    if problems.is_empty() { Ok(rules) } else { Err(problems) }
}

/// A paragraph, list item or table row of the contract, starting at `line`.
struct Block {
    line: usize,
    text: String,
}

/// The normative part of the contract (from section 1 on), cut into blocks; code is skipped.
fn blocks(text: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut started = false;
    let mut in_code = false;
    let mut current: Option<Block> = None;
    for (n, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("## 1.") {
            started = true;
        }
        if !started {
            continue;
        }
        if trimmed.starts_with("```") {
            in_code = !in_code;
            blocks.extend(current.take());
            continue;
        }
        let starts_item = trimmed.starts_with("- ")
            || trimmed.starts_with('|')
            || trimmed.starts_with('#')
            || after_list_number(trimmed).is_some();
        if in_code || trimmed.is_empty() || starts_item {
            blocks.extend(current.take());
        }
        if in_code || trimmed.is_empty() {
            continue;
        }
        match &mut current {
            Some(block) => {
                block.text.push(' ');
                block.text.push_str(trimmed);
            }
            None => current = Some(Block { line: n + 1, text: trimmed.to_owned() }),
        }
        if trimmed.starts_with('|') || trimmed.starts_with('#') {
            blocks.extend(current.take());
        }
    }
    blocks.extend(current);
    blocks
}

fn ends_sentence(text: &str, i: usize, c: char) -> bool {
    if c != '.' {
        return false;
    }
    let rest = &text[i + 1..];
    // "e.g." and "i.e." do not end a sentence; nor does a dot inside a word or a number.
    let before = &text[..i];
    if before.ends_with("e.g") || before.ends_with("i.e") {
        return false;
    }
    rest.is_empty() || rest.starts_with(' ')
}

fn has_keyword(sentence: &str) -> bool {
    sentence.split(|c: char| !c.is_ascii_alphabetic()).any(|w| w == "MUST" || w == "SHOULD")
}

fn valid_id(id: &str) -> bool {
    let Some(rest) = id.strip_prefix('§') else { return false };
    let Some((section, n)) = rest.split_once('-') else { return false };
    [section, n].iter().all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
}

/// The text after a numbered list item's marker (`11. `), if `line` starts with one.
fn after_list_number(line: &str) -> Option<&str> {
    line.split_once(". ").filter(|(n, _)| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit())).map(|(_, rest)| rest)
}

/// Markdown emphasis and list markers removed, white space folded.
fn plain(text: &str) -> String {
    let text = text.replace("**", "");
    let text = text.trim().trim_start_matches("- ").trim();
    let text = after_list_number(text).unwrap_or(text);
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    // A rule that continues a sentence after another rule's tag: ", and MUST NOT …".
    text.trim_start_matches([',', ';', ' ']).trim_start_matches("and ").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_normative_sentence_of_the_contract_is_numbered() {
        if let Err(problems) = contract_rules(CONTRACT_TEXT) {
            panic!("CONTRACT.md:\n{}", problems.join("\n"));
        }
    }

    /// A version bump that leaves the old one in the text (the environment table, the ready line's
    /// example, `/health`) tells a runtime written from it alone to declare a version the harness
    /// refuses. Only the `## Changes` section names earlier versions, and `## Versions` the older
    /// ones this harness still certifies (`model::contract`).
    #[test]
    fn the_contract_names_only_its_own_version_outside_its_changes() {
        let current = crate::run::incarnation::CONTRACT;
        let mut in_changes = false;
        let mut in_versions = false;
        let mut stale = Vec::new();
        for (i, line) in CONTRACT_TEXT.lines().enumerate() {
            if line.starts_with("## ") {
                in_changes = line.trim() == "## Changes";
                in_versions = line.trim() == "## Versions";
            }
            if in_versions {
                let certified = crate::model::contract::Version::ALL.iter().any(|v| line.contains(v.name()));
                let named = line.contains("killpoint-contract/");
                assert!(
                    !named || certified,
                    "CONTRACT.md:{}: `## Versions` names a version it does not certify",
                    i + 1
                );
                continue;
            }
            let named = line.match_indices("killpoint-contract/").map(|(at, _)| {
                let rest = &line[at..];
                let end =
                    rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '/')).unwrap_or(rest.len());
                &rest[..end]
            });
            for version in named {
                if !in_changes && version != current {
                    stale.push(format!("CONTRACT.md:{}: expected `{current}`, found `{version}`", i + 1));
                }
            }
        }
        assert!(stale.is_empty(), "{}", stale.join("\n"));
    }

    #[test]
    fn the_parser_finds_untagged_and_malformed_rules() {
        let text = "## 1. x\n\nA runtime MUST do a [§1-1]. It SHOULD do b.\n\n- It MUST do c [1-2].\n\n| a | MUST d [§1-1] |\n";
        let problems = contract_rules(text).unwrap_err();
        assert!(problems.iter().any(|p| p.contains("has no rule number") && p.contains("SHOULD do b")), "{problems:?}");
        assert!(problems.iter().any(|p| p.contains("numbered twice")), "{problems:?}");
        let ok = contract_rules("## 1. x\n\nIt MUST do a, e.g. b [§1-1].\n").unwrap();
        assert_eq!(ok[0].text, "It MUST do a, e.g. b");
    }
}
