// The demo's users (SPEC §13): a page opened as `?user=alice` (or bob) belongs to that user. Its
// tokens come from the demo's site backend, which `cargo xtask demo` starts on the bridge's port
// plus one — the site backend's job, shown for the demo: a real site mints them after its own
// login (docs/deploy.md, *A site with many users*). Without `?user=` the page sends no token, as on a
// bridge that verifies none.

export const demoUser = new URLSearchParams(location.search).get("user");

const backend = `${location.protocol}//${location.hostname}:${Number(location.port || 80) + 1}`;

/** A fresh token of the demo's user, for `role` "page" (the page) or "agent" (its console). */
export async function demoToken(role) {
  const url = `${backend}/token?user=${encodeURIComponent(demoUser)}&role=${role}`;
  const answer = await fetch(url);
  if (!answer.ok) throw new Error(`the demo's site backend refused (${answer.status}): ${await answer.text()}`);
  return answer.text();
}

/** The page's options: with a user, its token from the site backend, fetched before each connect
 *  and before it expires. */
export function pageOptions(endpoint) {
  return demoUser ? { endpoint, token: () => demoToken("page") } : { endpoint };
}
