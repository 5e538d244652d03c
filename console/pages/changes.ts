/// <reference lib="dom" />
// What changed (raw permission): energy revisions in commit order, followed page by page with the
// feed's cursor, newest pages appended; and the import batches, each linking to its detail.
import { useEffect, useState } from "preact/hooks";
import {
  type Actor,
  ApiError,
  type BatchList,
  type Change,
  type ChangesPage as FeedPage,
  get,
  type StoresResponse,
} from "../api.ts";
import { DIGITS } from "../format.ts";
import { t, words } from "../i18n.ts";
import type { Session } from "../main.ts";
import {
  Code,
  errorText,
  formatCount,
  html,
  Link,
  listed,
  Loaded,
  Num,
  show,
  Table,
  useLoad,
  useTitle,
  When,
  withUnit,
  withZone,
} from "../ui.ts";

const actorName = (a: Actor | null) => a === null ? t("none") : a.display_name ?? a.login_name;

const served = (kwh: string | null, status: string | null) =>
  status === "AVAILABLE"
    ? html`<${Num} value=${kwh} digits=${DIGITS.kwh} unit="kWh" />`
    : html`<${Code} code=${status} />`;

// The names of the stores the key may see, by id (a store not among them keeps its number).
const useStoreNames = () => {
  const { load } = useLoad((signal) => get<StoresResponse>("/api/v1/stores", signal), []);
  return new Map(load.state === "ready" ? load.value.stores.map((s) => [s.id, s.name]) : []);
};

// The feed from the latest commits, or from the start: each "more" follows the last cursor.
const Feed = () => {
  const storeNames = useStoreNames();
  const [changes, setChanges] = useState<ReadonlyArray<Change>>([]);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [more, setMore] = useState(true);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  // `from`: the query of the first request (a cursor, or a commit to start at).
  const next = async (
    from = cursor === undefined ? "" : `&after=${cursor}`,
    shown: ReadonlyArray<Change> = changes,
  ) => {
    setBusy(true);
    setError(null);
    try {
      // Up to three requests: a page that looked only at other stores' rows is short.
      let query = from;
      let after: string | undefined;
      let found: Array<Change> = [];
      let hasMore = true;
      for (let i = 0; i < 3 && found.length === 0 && hasMore; i++) {
        const page = await get<FeedPage>(`/api/v1/changes?limit=200${query}`);
        found = [...found, ...page.changes];
        after = page.next_cursor;
        query = `&after=${encodeURIComponent(after)}`;
        hasMore = page.has_more;
      }
      setChanges([...shown, ...found]);
      setCursor(after);
      setMore(hasMore);
    } catch (e) {
      setError(e instanceof ApiError ? errorText(e) : String(e));
    } finally {
      setBusy(false);
    }
  };

  // The head: the last commit's number (null for a key limited to some stores, which starts at
  // the head's cursor only; cursors are opaque).
  const [head, setHead] = useState<number | null>(null);
  const startAt = async (seq?: number) => {
    try {
      const first = await get<FeedPage>("/api/v1/changes?limit=1");
      setHead(first.head_seq);
      const at = seq === undefined || first.head_seq === null
        ? `&after=${encodeURIComponent(first.head_cursor)}`
        : `&from_seq=${Math.min(Math.max(seq, 0), first.head_seq)}`;
      await next(at, []);
    } catch (e) {
      setError(e instanceof ApiError ? errorText(e) : String(e));
    }
  };

  useEffect(() => {
    startAt();
  }, []);

  const pick = (event: Event) => {
    event.preventDefault();
    const input = (event.target as HTMLFormElement).elements.namedItem("seq") as HTMLInputElement;
    startAt(Number(input.value));
  };

  return html`
    <section aria-labelledby="feed-title">
      <h2 id="feed-title">${t("feedTitle")}</h2>
      <p class="muted">${t("feedIntro")}</p>
      ${head !== null && html`
        <form class="range" onSubmit=${pick}>
          <label><span>${t("feedFrom", { head })}</span>
            <input name="seq" type="number" min="1" max=${head} value=${head} />
          </label>
          <button type="submit" disabled=${busy}>${t("asOfShow")}</button>
        </form>
      `}
      ${changes.length > 0 && html`
        <${Table} caption=${t("feedTitle")} head=${[
          withZone(t("committedAt")),
          t("batch"),
          t("store"),
          t("date"),
          t("revision"),
          t("operation"),
          withUnit(t("before"), "kWh"),
          withUnit(t("after"), "kWh"),
          t("source"),
          t("actor"),
        ]}>
          ${changes.map((c) =>
            html`
              <tr data-testid="change-row">
                <th scope="row">
                  <${When} at=${c.committed_at} testid="change-at" />
                </th>
                <td>
                  <${Link} href=${`/console/imports/${c.batch_id}`}>${c.batch_no}<//></td>
                <td data-testid="change-store"><${Link} href=${`/console/stores/${c.store_id}`}>${storeNames
                  .get(c.store_id) ?? c.store_id}<//></td>
                <td><${Link} href=${`/console/stores/${c.store_id}/days/${c.business_date}`}>${c
                  .business_date}<//></td>
                <td>${c.revision_no}</td>
                <td><${Code} code=${c.operation} /></td>
                <td class="num">${served(c.before_energy_kwh, c.before_status)}</td>
                <td class="num" data-testid="change-after">${served(c.energy_kwh, c.status)}</td>
                <td><${Code} code=${c.source_kind} /></td>
                <td>${actorName(c.actor)}</td>
              </tr>
            `
          )}
        <//>
      `}
      <p role="status" class="muted" data-testid="feed-status">${t("feedShown", {
        n: formatCount(changes.length),
      })}${more ? "" : ` · ${t("feedUpToDate")}`}</p>
      ${error && html`<p class="alert" role="alert">${error}</p>`}
      <button type="button" onClick=${() => next()} disabled=${busy ||
        !more} data-testid="feed-more">${t("feedMore")}</button>
      <button type="button" onClick=${() => next(undefined, [])} disabled=${busy}>${t(
        "feedStart",
      )}</button>
    </section>
  `;
};

const Batches = () => {
  const [status, setStatus] = useState("");
  const { load, reload } = useLoad(
    (signal) =>
      get<BatchList>(
        `/api/v1/imports?limit=200${status === "" ? "" : `&status=${status}`}`,
        signal,
      ),
    [status],
  );
  return html`
    <section aria-labelledby="batches-title">
      <h2 id="batches-title">${t("batchesTitle")}</h2>
      <label>
        <span>${t("status")}</span>
        <select value=${status} onChange=${(event: Event) =>
          setStatus((event.target as HTMLSelectElement).value)}>
          <option value="">${t("all")}</option>
          ${["PREVIEWED", "COMMITTED", "EXPIRED"].map((s) =>
            html`<option value=${s}>${words(s)}</option>`
          )}
        </select>
      </label>
      <${Loaded} load=${load} retry=${reload}>${(value: BatchList) =>
        html`
          <${Table} caption=${t("batchesTitle")} head=${[
            t("batch"),
            t("kind"),
            t("status"),
            t("file"),
            t("reason"),
            withZone(t("uploadedAt")),
            withZone(t("committedAt")),
            t("actor"),
            t("rows"),
          ]}>
            ${value.batches.map((b) =>
              html`
                <tr data-testid="batch-row">
                  <th scope="row">
                    <${Link} href=${`/console/imports/${b.id}`}>${b.batch_no}<//></th>
                  <td><${Code} code=${b.batch_kind} /></td>
                  <td><${Code} code=${b.status} /></td>
                  <td>${show(b.filename)}</td>
                  <td>${show(b.change_reason)}</td>
                  <td><${When} at=${b.uploaded_at} /></td>
                  <td><${When} at=${b.committed_at} /></td>
                  <td>${actorName(b.uploaded_by)}</td>
                  <td>${listed(
                    Object.entries(b.action_counts).filter(([, n]) => n > 0).map(([a, n]) =>
                      `${words(a)} ${formatCount(n)}`
                    ),
                  )}</td>
                </tr>
              `
            )}
          <//>
          ${value.next_after !== null && html`<p class="muted">${t("batchesMore")}</p>`}
        `}<//>
    </section>
  `;
};

export const ChangesPage = (props: { session: Session }) => {
  useTitle(t("changesTitle"));
  return html`
    <h1 tabindex="-1">${t("changesTitle")}</h1>
    ${props.session.may("raw")
      ? html`
        <${Feed} />
        <${Batches} />
      `
      : html`<p class="alert" role="alert">${t("forbidden")}</p>`}
  `;
};
