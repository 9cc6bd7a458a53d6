//! A user's tabs as one (SPEC §13: `/mcp?user=SUB`, `/api/users/{sub}/…`, or an agent token signed
//! for one person). The agent sees one tool list — the union of the tabs' by listed name — and each
//! call goes to one tab: the one it names (`_meta["clienttools/session"]`), else the one offering
//! the tool that was most recently in front (client_tools_core::tabs decides). When two tabs define
//! one name differently, the definition listed is that of the tab most recently in front, and a
//! call runs only on a tab whose definition is the listed one: an agent never calls a tool other
//! than the one it read.

use std::collections::HashMap;
use std::sync::Arc;

use client_tools_core::protocol::{meta, Tool};
use client_tools_core::tabs;
use serde_json::Value;

use crate::sessions::page_session::PageSession;

/// One tool of the union: the definition listed, and the tabs offering exactly it (most recently
/// in front first).
pub(crate) struct Listed {
    pub tool: Tool,
    pub sessions: Vec<String>,
}

/// `pages`, most recently in front first (the order of client_tools_core::tabs).
fn by_activity(pages: &[Arc<PageSession>]) -> Vec<(Arc<PageSession>, Vec<Tool>)> {
    let mut ranked: Vec<_> = pages
        .iter()
        .map(|page| (page.activity().rank(), page.clone()))
        .collect();
    ranked.sort_by_key(|(rank, _)| std::cmp::Reverse(*rank));
    ranked
        .into_iter()
        .map(|(_, page)| {
            let tools = page.tools();
            (page, tools)
        })
        .collect()
}

/// The tools of a user's tabs, by listed name, in the order the front-most tab lists them (then
/// the next tab's new names, and so on).
pub(crate) fn union(pages: &[Arc<PageSession>]) -> Vec<Listed> {
    let mut listed: Vec<Listed> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for (page, tools) in by_activity(pages) {
        for tool in tools {
            match index.get(&tool.name) {
                Some(&at) if listed[at].tool == tool => listed[at].sessions.push(page.id().into()),
                Some(_) => {} // another definition: the front-most tab's is the one listed
                None => {
                    index.insert(tool.name.clone(), listed.len());
                    listed.push(Listed {
                        tool,
                        sessions: vec![page.id().to_owned()],
                    });
                }
            }
        }
    }
    listed
}

/// The `_meta` of a listed tool: its own, with the tabs offering it.
pub(crate) fn listed_meta(listed: &Listed) -> serde_json::Map<String, Value> {
    let mut meta = listed.tool.meta.clone().unwrap_or_default();
    meta.insert(meta::SESSIONS.into(), listed.sessions.clone().into());
    meta
}

/// The tab a call of `name` runs on: `asked` (`_meta["clienttools/session"]`) when it is one of
/// the user's tabs offering the listed definition, else the one most recently in front that does.
/// `Err`: why none, as the agent is told (another user's session is just not one of these).
pub(crate) fn route(
    pages: &[Arc<PageSession>],
    name: &str,
    asked: Option<&str>,
) -> Result<Arc<PageSession>, String> {
    let Some(listed) = union(pages).into_iter().find(|l| l.tool.name == name) else {
        return Err(match asked {
            Some(asked) => format!("no page session '{asked}' of this user offers tool '{name}'"),
            None => format!("no open tab of this user offers tool '{name}'"),
        });
    };
    let chosen = match asked {
        Some(asked) => listed.sessions.iter().find(|id| *id == asked),
        None => listed.sessions.first(),
    };
    let Some(chosen) = chosen else {
        let asked = asked.unwrap_or_default();
        return Err(match pages.iter().any(|page| page.id() == asked) {
            true => format!(
                "page session '{asked}' does not offer tool '{name}' as listed (another tab's \
                 definition is the listed one): list the tools again"
            ),
            false => format!("no page session '{asked}' of this user is connected"),
        });
    };
    let page = pages.iter().find(|page| page.id() == chosen);
    Ok(page.expect("a listed session is one of the pages").clone())
}

/// The most recently in front of `pages` (for a user's requests that name no tool).
pub(crate) fn front_most(pages: &[Arc<PageSession>]) -> Option<Arc<PageSession>> {
    tabs::most_recently_in_front(pages.iter().map(|page| (page.clone(), page.activity())))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::limits::Limits;
    use crate::sessions::fake_page::FakePage;

    fn tool(name: &str, description: &str) -> Tool {
        serde_json::from_value(json!({
            "name": name,
            "description": description,
            "inputSchema": {"type": "object"},
        }))
        .unwrap()
    }

    /// A connected tab of `alice` listing `tools`, that reported being in front (or not) at `at`.
    fn tab(id: &str, tools: Vec<Tool>, in_front: bool) -> (Arc<PageSession>, FakePage) {
        let session = Arc::new(
            PageSession::new(id.into(), Vec::new(), Limits::default(), false)
                .with_user(Some("alice".into())),
        );
        let page = FakePage::connect(&session);
        session.set_tools(tools);
        session.report_activity(in_front, in_front);
        (session, page)
    }

    #[tokio::test]
    async fn the_union_lists_each_name_once_with_the_tabs_offering_it() {
        let (board, _b) = tab(
            "board",
            vec![tool("read_board", "r"), tool("note", "n")],
            false,
        );
        let (cart, _c) = tab(
            "cart",
            vec![tool("read_cart", "c"), tool("note", "n")],
            true,
        );
        let listed = union(&[board.clone(), cart.clone()]);
        let names: Vec<&str> = listed.iter().map(|l| l.tool.name.as_str()).collect();
        // The front-most tab's tools first, then the other's new names.
        assert_eq!(names, ["read_cart", "note", "read_board"]);
        let note = listed.iter().find(|l| l.tool.name == "note").unwrap();
        assert_eq!(note.sessions, ["cart", "board"]);
        assert_eq!(listed_meta(note)[meta::SESSIONS], json!(["cart", "board"]));
    }

    #[tokio::test]
    async fn a_call_goes_to_the_tab_in_front_that_offers_the_tool() {
        let (board, _b) = tab(
            "board",
            vec![tool("read_board", "r"), tool("note", "n")],
            false,
        );
        let (cart, _c) = tab(
            "cart",
            vec![tool("read_cart", "c"), tool("note", "n")],
            true,
        );
        let pages = [board.clone(), cart.clone()];
        assert_eq!(route(&pages, "note", None).unwrap().id(), "cart");
        assert_eq!(route(&pages, "read_board", None).unwrap().id(), "board");
        // The person switches tabs: the shared tool follows.
        cart.report_activity(false, false);
        board.report_activity(true, true);
        assert_eq!(route(&pages, "note", None).unwrap().id(), "board");
        // A call naming its tab runs there; naming a tab without the tool, or no tab of the
        // user's, is refused with the reason.
        assert_eq!(route(&pages, "note", Some("cart")).unwrap().id(), "cart");
        let refused = route(&pages, "read_cart", Some("board")).err().unwrap();
        assert!(
            refused.contains("does not offer tool 'read_cart'"),
            "{refused}"
        );
        let stranger = route(&pages, "note", Some("bobs-tab")).err().unwrap();
        assert!(
            stranger.contains("no page session 'bobs-tab'"),
            "{stranger}"
        );
        let none = route(&pages, "missing", None).err().unwrap();
        assert!(none.contains("no open tab"), "{none}");
        assert_eq!(front_most(&pages).unwrap().id(), "board");
    }

    #[tokio::test]
    async fn two_definitions_of_one_name_list_the_front_tabs_and_run_only_where_it_is_the_same() {
        let (old, _o) = tab("old", vec![tool("save", "old save")], false);
        let (new, _n) = tab("new", vec![tool("save", "new save")], true);
        let pages = [old.clone(), new.clone()];
        let listed = union(&pages);
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].tool.description.as_deref(), Some("new save"));
        assert_eq!(listed[0].sessions, ["new"]);
        // The other tab's definition is not the listed one: a call never runs there.
        let refused = route(&pages, "save", Some("old")).err().unwrap();
        assert!(refused.contains("as listed"), "{refused}");
        assert_eq!(route(&pages, "save", None).unwrap().id(), "new");
    }
}
