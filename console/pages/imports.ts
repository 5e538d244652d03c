/// <reference lib="dom" />
// Imports (write permission): the template as a file, an upload previewed and reviewed a page at a
// time (rows named by their cell, filtered by action or warning, downloadable; or every located
// problem of a refused file), discarded or committed with an Idempotency-Key made once per preview
// (a retry after a lost connection sends the same request), and batch details.
import { useEffect, useRef, useState } from "preact/hooks";
import {
  ApiError,
  call,
  type DiscardResult,
  type FailureCode,
  get,
  type ImportBatch,
  type ImportReview,
  type ImportRow,
  type PlausibilityWarning,
  type PreviewInput,
  type ReviewRow,
  type StoresResponse,
  type Template,
} from "../api.ts";
import { type Key, t, words } from "../i18n.ts";
import type { Session } from "../main.ts";
import { DIGITS, MAX_FILE_BYTES } from "../format.ts";
import {
  Code,
  Download,
  formatCount,
  formatDecimal,
  html,
  labelOf,
  Link,
  Loaded,
  navigate,
  NumCell,
  saveFile,
  show,
  Table,
  useLoad,
  useTitle,
  When,
  withUnit,
} from "../ui.ts";

const ACTIONS = [
  "INSERT",
  "UPDATE",
  "RELINK",
  "RESTORE",
  "VOID",
  "KEEP_CLEANED",
  "UNCHANGED",
  "SKIP_MISSING",
] as const;

const base64Of = (bytes: Uint8Array) => {
  let text = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(text);
};

const download = (template: Template) => {
  const bytes = Uint8Array.from(atob(template.content_base64), (c) => c.charCodeAt(0));
  saveFile(
    new Blob([bytes], {
      type: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    }),
    template.filename,
  );
};

// The conflicts the page explains in its own words: each is a code of the service and a word here.
const CONFLICTS = [
  "STALE_PREVIEW",
  "BATCH_EXPIRED",
  "ALREADY_COMMITTED",
  "NOT_COMMITTABLE",
  "IDEMPOTENCY_KEY_REUSED",
] as const satisfies ReadonlyArray<FailureCode & Key>;

const conflictText = (error: ApiError) => {
  const conflict = CONFLICTS.find((code) => code === error.code);
  return error.status === 409 && conflict !== undefined
    ? t(conflict)
    : error.code === "NETWORK"
    ? t("networkRetry")
    : error.message;
};

// The rows of a batch grouped by action, each group a table (blank cells folded away).
export const RowsByAction = (props: {
  rows: ReadonlyArray<ImportRow>;
  storeNames: ReadonlyMap<number, string>;
}) =>
  html`${
    ACTIONS.filter((a) => props.rows.some((r) => r.action === a)).map((action) => {
      const rows = props.rows.filter((r) => r.action === action);
      return html`
        <details class="action-group" open=${action !== "SKIP_MISSING" &&
          action !== "UNCHANGED"} data-testid="action-group" data-action=${action}>
          <summary><${Code} code=${action} /> <span class="count">${rows.length}</span></summary>
          <${Table}
            caption=${words(action)}
            head=${[
              t("rowNo"),
              t("store"),
              t("date"),
              withUnit(t("before"), "kWh"),
              withUnit(t("proposed"), "kWh"),
              t("note"),
            ]}
          >
                  ${rows.slice(0, 500).map((r) =>
                    html`
                      <tr data-testid="preview-row">
                        <th scope="row">${r.row_number}</th>
                        <td>${props.storeNames.get(r.resolved_store_id) ?? r.resolved_store_id}</td>
                        <td>${r.business_date}</td>
                        <${NumCell} value=${r.before_energy_kwh} digits=${DIGITS.kwh} unit="kWh" />
                        <${NumCell} value=${r.proposed_energy_kwh ?? r.raw_energy} digits=${DIGITS
                          .kwh} unit="kWh" />
                        <td>${show(r.quality_note)}</td>
                      </tr>
                    `
                  )}
                <//>
                ${rows.length > 500 ? html`<p class="muted">… ${rows.length - 500}</p>` : ""}
              </details>
      `;
    })
  }`;

// The actions whose rows a commit writes.
const CHANGING = ["INSERT", "UPDATE", "RELINK", "RESTORE", "VOID"];

// What a commit did: the days whose value changed, and apart from them the days that kept their
// value and are now traced to the file (RELINK).
const committedText = (b: PreviewHead) => {
  const relinked = b.action_counts.RELINK ?? 0;
  const changed = CHANGING.reduce((n, a) => n + (b.action_counts[a] ?? 0), 0) - relinked;
  return relinked === 0
    ? (changed === 1 ? t("committedOkOne") : t("committedOk", { n: formatCount(changed) }))
    : t("committedRelinked", { n: formatCount(changed), relinked: formatCount(relinked) });
};

// A row's name: its cell, in the words the problems of a refused file use.
const rowName = (r: ReviewRow) =>
  r.sheet === null
    ? t("csvRowCol", { row: r.file_row, column: r.column })
    : t("sheetRowCol", { sheet: r.sheet, row: r.file_row, column: r.column });

// kWh in a warning, for people; the exact values are in the warning's title.
const kwhText = (value: string) => formatDecimal(value, DIGITS.kwh);

const warningText = (w: PlausibilityWarning) => {
  const params = {
    mean: w.recent_mean_kwh === null ? "" : kwhText(w.recent_mean_kwh),
    days: w.recent_days,
    before: w.before_kwh === null ? "" : kwhText(w.before_kwh),
  };
  return w.code === "DROP_TO_ZERO" && w.before_kwh === null
    ? t("DROP_TO_ZERO_MEAN", params)
    : t(w.code, params);
};

const REVIEW_PAGE = 100;

interface ReviewFilter {
  readonly action: string | null;
  readonly warned: boolean;
}

const reviewQuery = (filter: ReviewFilter) =>
  (filter.action === null ? "" : `&action=${filter.action}`) + (filter.warned ? "&warned=1" : "");

// The review of a preview: its warnings, its rows a page at a time named by their cell, a filter by
// action or warning, and a download of the rows the filter keeps.
// What the page shows of a preview: the preview's answer, or a review's head when the page is
// drawn again (another language, a reload, Back) for a preview not yet committed or discarded.
type PreviewHead = Pick<
  ImportBatch,
  "id" | "batch_no" | "total_rows" | "filename" | "action_counts"
>;

// The address of the page with its preview: drawn again, the page shows that preview again.
const IMPORTS_PATH = "/console/imports";
const showPreviewIn = (id: number | null) =>
  history.replaceState(null, "", id === null ? IMPORTS_PATH : `${IMPORTS_PATH}?preview=${id}`);

const Review = (props: {
  batch: PreviewHead;
  storeNames: ReadonlyMap<number, string>;
  round: number;
}) => {
  const batchId = props.batch.id;
  const [filter, setFilter] = useState<ReviewFilter>({ action: null, warned: false });
  const [offset, setOffset] = useState(0);
  const review = useLoad(
    (signal) =>
      get<ImportReview>(
        `/api/v1/imports/${batchId}/review?row_offset=${offset}&row_limit=${REVIEW_PAGE}${
          reviewQuery(filter)
        }`,
        signal,
      ),
    [batchId, offset, filter.action, filter.warned, props.round],
  );
  // The warnings' count stays shown while another page or filter loads.
  const last = useRef<ImportReview | null>(null);
  if (review.load.state === "ready") last.current = review.load.value;
  const warned = last.current?.id === batchId ? last.current.warned_rows : 0;
  const choose = (next: ReviewFilter) => {
    setFilter(next);
    setOffset(0);
  };
  const chip = (label: string, pressed: boolean, next: ReviewFilter, attrs: object = {}) =>
    html`
      <button type="button" class="chip" aria-pressed=${pressed} onClick=${() => choose(next)}
        ...${attrs}>${label}</button>
    `;
  // The filters come from the preview's own counts: they are there as soon as the preview is.
  const counts = props.batch.action_counts;
  return html`
    ${warned > 0 &&
      html`
        <div class="warning" role="status" data-testid="warnings-summary">
          <p>${t("warningsTitle", { n: warned })}</p>
        </div>
      `}
    <div class="filters" role="group" aria-label=${t("reviewFilter")} data-testid="review-filter">
      ${chip(
        t("allRows", { n: props.batch.total_rows }),
        filter.action === null && !filter.warned,
        {
          action: null,
          warned: false,
        },
        { "data-testid": "filter-all" },
      )}
      ${ACTIONS.filter((a) => (counts[a] ?? 0) > 0).map((a) =>
        chip(
          withUnit(words(a), String(counts[a])),
          filter.action === a,
          { action: a, warned: false },
          { "data-testid": "action-group", "data-action": a, title: a },
        )
      )}
      ${warned > 0 &&
        chip(t("warnedRows", { n: warned }), filter.warned, {
          action: null,
          warned: true,
        }, { "data-testid": "filter-warned" })}
      <${Download}
        href=${`/api/v1/imports/${batchId}/review?download=csv${reviewQuery(filter)}`}
        testid="review-download"
      >${t("downloadRows")}<//>
    </div>
    <${Loaded} load=${review.load} retry=${review.reload}>${(r: ImportReview) =>
      html`
        ${(r.action_counts.KEEP_CLEANED ?? 0) > 0 &&
          html`<p class="muted" data-testid="keep-cleaned-hint">${
            t("keepCleanedHint", {
              n: formatCount(r.action_counts.KEEP_CLEANED),
            })
          }</p>`}
        ${r.matched_rows === 0
          ? html`<p class="muted" data-testid="review-empty">${t("noRowsMatch")}</p>`
          : html`
            <p class="muted" data-testid="review-shown">${t("rowsShown", {
              from: r.row_offset + 1,
              to: r.row_offset + r.rows.length,
              total: r.matched_rows,
            })}</p>
            <${Table}
              caption=${t("previewTitle", { batch: r.batch_no })}
              head=${[
                t("cell"),
                t("store"),
                t("date"),
                withUnit(t("before"), "kWh"),
                withUnit(t("proposed"), "kWh"),
                t("action"),
                t("warningsCol"),
                t("note"),
              ]}
            >
              ${r.rows.map((row) =>
                html`
                  <tr data-testid="review-row" data-action=${row
                    .action} class=${row.warnings.length > 0 ? "warned" : ""}>
                    <th scope="row" data-testid="row-name">${rowName(row)}</th>
                    <td>${props.storeNames.get(row.resolved_store_id) ?? show(row.store_name)}</td>
                    <td>${row.business_date}</td>
                    <${NumCell} value=${row.before_energy_kwh} digits=${DIGITS.kwh} unit="kWh" />
                    ${row.action === "KEEP_CLEANED"
                      // The file's value, not written: the day keeps its cleaned value.
                      ? html`<td class="num ignored" title=${t("notWritten")}>${
                        show(
                          row.raw_energy,
                        )
                      }</td>`
                      : html`<${NumCell} value=${
                        row.proposed_energy_kwh ??
                          (row.raw_energy !== null && /^\s*(void|作废)\s*$/i.test(row.raw_energy)
                            ? words("VOID")
                            : row.raw_energy)
                      } digits=${DIGITS.kwh} unit="kWh" />`}
                    <td>
                      <${Code} code=${row.action} />
                    </td>
                    <td>${row.warnings.length === 0
                      ? ""
                      : html`<ul class="warnings">${
                        row.warnings.map((w) =>
                          html`
                            <li class="warning" data-testid="row-warning" data-code=${w.code}
                              title=${w.message}>⚠ ${warningText(w)}</li>
                          `
                        )
                      }</ul>`}</td>
                    <td>${show(row.quality_note)}</td>
                  </tr>
                `
              )}
            <//>
            <div class="pager">
              <button type="button" data-testid="review-previous" disabled=${offset ===
                0} onClick=${() => setOffset(Math.max(0, offset - REVIEW_PAGE))}>${t(
                  "previous",
                )}</button>
              <button type="button" data-testid="review-next" disabled=${offset + REVIEW_PAGE >=
                r.matched_rows} onClick=${() => setOffset(offset + REVIEW_PAGE)}>${t(
                  "next",
                )}</button>
            </div>
          `}
      `}<//>
  `;
};

const Counts = (props: { counts: Readonly<Record<string, number>> }) =>
  html`<ul class="counts" data-testid="action-counts">
    ${
    ACTIONS.map((a) =>
      html`
        <li
          data-action=${a}><${Code} code=${a} />${labelOf("")}<strong>${props.counts[a] ??
            0}</strong></li>
      `
    )
  }
  </ul>`;

const useStoreNames = () => {
  const stores = useLoad(
    (signal) => get<StoresResponse>("/api/v1/stores", signal),
    [],
  );
  return new Map(
    stores.load.state === "ready" ? stores.load.value.stores.map((s) => [s.id, s.name]) : [],
  );
};

export const ImportsPage = (props: { session: Session; query: URLSearchParams }) => {
  useTitle(t("importsTitle"));
  const storeNames = useStoreNames();
  const [templateBusy, setTemplateBusy] = useState(false);
  const [templateError, setTemplateError] = useState<string | null>(null);
  const [busy, setBusy] = useState<"preview" | "commit" | "discard" | null>(null);
  const [discarded, setDiscarded] = useState<DiscardResult | null>(null);
  const [problems, setProblems] = useState<string[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [preview, setPreview] = useState<PreviewHead | null>(null);
  const [committed, setCommitted] = useState<ImportBatch | null>(null);
  // One key per request: kept while the same file and reason are sent again after a failure, until
  // the request is answered.
  const [previewKey, setPreviewKey] = useState<{ signature: string; key: string } | null>(null);
  const [commitKey, setCommitKey] = useState<{ batch: number; key: string } | null>(null);
  // The preview named in the address when it can no longer be committed, or could not be read.
  const [namedGone, setNamedGone] = useState<
    { batch: ImportReview } | { failure: string } | null
  >(null);

  // The preview named in the address, while it can still be committed (and no file has been sent
  // since the page was drawn: its answer is the preview then). One committed, discarded or expired
  // since (a bookmark, a link sent to a colleague) is said so, with its batch.
  const named = props.query.get("preview");
  const sent = useRef(false);
  useEffect(() => {
    if (named === null || !/^\d{1,9}$/.test(named)) return;
    const controller = new AbortController();
    get<ImportReview>(`/api/v1/imports/${named}/review?row_limit=1`, controller.signal).then(
      (review) => {
        if (sent.current) return;
        if (review.status !== "PREVIEWED") {
          setNamedGone({ batch: review });
          return showPreviewIn(null);
        }
        setPreview(review);
        setCommitKey({ batch: review.id, key: crypto.randomUUID() });
      },
      (failure) => {
        if ((failure as Error).name === "AbortError" || sent.current) return;
        setNamedGone({ failure: (failure as Error).message });
        showPreviewIn(null);
      },
    );
    return () => controller.abort();
  }, []);

  if (!props.session.may("write")) {
    return html`
      <h1 tabindex="-1">${t("importsTitle")}</h1>
      <p class="alert" role="alert">${t("forbidden")}</p>
    `;
  }

  const getTemplate = async () => {
    setTemplateBusy(true);
    setTemplateError(null);
    try {
      download(await get<Template>("/api/v1/imports/template"));
    } catch (failure) {
      setTemplateError((failure as Error).message);
    } finally {
      setTemplateBusy(false);
    }
  };

  const submit = async (event: Event) => {
    event.preventDefault();
    const form = event.target as HTMLFormElement;
    const file = (form.elements.namedItem("file") as HTMLInputElement).files?.[0];
    const reason = (form.elements.namedItem("reason") as HTMLInputElement).value;
    if (file === undefined) return;
    sent.current = true;
    setNamedGone(null);
    setBusy("preview");
    setProblems(null);
    setError(null);
    setPreview(null);
    setCommitted(null);
    setDiscarded(null);
    try {
      if (file.size > MAX_FILE_BYTES) {
        setError(t("fileTooLarge", { bytes: file.size, max: MAX_FILE_BYTES }));
        return;
      }
      const bytes = new Uint8Array(await file.arrayBuffer());
      const content = base64Of(bytes);
      // The same request again (a retry) reuses its key; a file changed anywhere is a new one.
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
      const signature = `${file.name}\u0000${reason}\u0000${base64Of(digest)}`;
      const key = previewKey?.signature === signature ? previewKey.key : crypto.randomUUID();
      setPreviewKey({ signature, key });
      const body: PreviewInput = { filename: file.name, content_base64: content, reason };
      const batch = await call<ImportBatch>("POST", "/api/v1/imports/preview", {
        headers: { "idempotency-key": key },
        body,
      });
      setPreview(batch);
      showPreviewIn(batch.id);
      setCommitKey({ batch: batch.id, key: crypto.randomUUID() });
      // Answered: the same file sent again (after a discard, say) is a new preview, not this one.
      setPreviewKey(null);
    } catch (failure) {
      if (failure instanceof ApiError && failure.code === "INVALID_FILE") {
        setProblems(failure.message.split("\n").slice(1).map((line) => line.replace(/^- /, "")));
        setError(failure.message.split("\n")[0]);
      } else {
        setError(failure instanceof ApiError ? conflictText(failure) : (failure as Error).message);
      }
    } finally {
      setBusy(null);
    }
  };

  const commit = async () => {
    if (preview === null || commitKey === null) return;
    setBusy("commit");
    setError(null);
    try {
      const batch = await call<ImportBatch>("POST", `/api/v1/imports/${preview.id}/commit`, {
        headers: { "idempotency-key": commitKey.key },
        body: {},
      });
      setCommitted(batch);
      showPreviewIn(null);
    } catch (failure) {
      setError(failure instanceof ApiError ? conflictText(failure) : (failure as Error).message);
    } finally {
      setBusy(null);
    }
  };

  // A discarded preview can never be committed: it is cleared from the page.
  const discard = async () => {
    if (preview === null) return;
    setBusy("discard");
    setError(null);
    try {
      const result = await call<DiscardResult>("POST", `/api/v1/imports/${preview.id}/discard`, {
        body: {},
      });
      setDiscarded(result);
      setPreview(null);
      showPreviewIn(null);
      setCommitKey(null);
    } catch (failure) {
      setError(failure instanceof ApiError ? conflictText(failure) : (failure as Error).message);
    } finally {
      setBusy(null);
    }
  };

  const changing = (b: PreviewHead) => CHANGING.reduce((n, a) => n + (b.action_counts[a] ?? 0), 0);

  return html`<h1 tabindex="-1">${t("importsTitle")}</h1>
    <p>${t("importsIntro")}</p>
    <section aria-labelledby="template-title">
      <h2 id="template-title">${t("template")}</h2>
      <button type="button" onClick=${getTemplate} disabled=${templateBusy} data-testid="template">
        ${templateBusy ? t("preparing") : t("downloadTemplate")}
      </button>
      ${templateError && html`<p class="alert" role="alert">${templateError}</p>`}
    </section>
    <section aria-labelledby="upload-title">
      <h2 id="upload-title">${t("upload")}</h2>
      <form class="upload" onSubmit=${submit}>
        <label><span>${t("fileLabel")}</span>
          <input name="file" type="file" required accept=".xlsx,.csv,text/csv,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" />
        </label>
        <label><span>${t("reasonLabel")}</span>
          <input name="reason" required maxlength="500" placeholder=${t("reasonHint")} />
        </label>
        <button type="submit" disabled=${busy !== null}>${
    busy === "preview" ? t("previewing") : t("previewButton")
  }</button>
      </form>
      ${
    error &&
    html`<div class="alert" role="alert" data-testid="import-error"><p>${error}</p>${
      problems && html`
        <ul class="problems" tabindex="0" aria-label=${t("fileRejected")}>${problems.map((p) =>
          html`<li>${p}</li>`
        )}</ul>
      `
    }</div>`
  }
    </section>
    ${
    namedGone &&
    ("batch" in namedGone
      ? html`
        <p class="notice" role="status"
          data-testid="preview-gone">${t(
            namedGone.batch.status === "COMMITTED" ? "previewWasCommitted" : "previewNoLonger",
            {
              batch: namedGone.batch.batch_no,
            },
          )} <${Link} href=${`/console/imports/${namedGone.batch.id}`}>${t("openBatch")}<//></p>
      `
      : html`<p class="alert" role="alert" data-testid="preview-gone">${
        t("previewNotRead", { message: namedGone.failure })
      }</p>`)
  }
    ${
    discarded &&
    html`<p class="notice" role="status" data-testid="discarded">${
      t("discardedOk", { batch: discarded.batch_no })
    }</p>`
  }
    ${
    preview &&
    html`<section aria-labelledby="preview-title" data-testid="preview">
      <h2 id="preview-title">${t("previewTitle", { batch: preview.batch_no })}</h2>
      <p>${t("counts", { total: preview.total_rows })} · ${show(preview.filename)}</p>
      <${Counts} counts=${preview.action_counts} />
      ${
      committed === null
        ? html`
          <div class="pager">
            <button type="button" class="primary" onClick=${commit} disabled=${busy !== null ||
              changing(preview) === 0}
              aria-describedby=${changing(preview) === 0
                ? "nothing-to-commit"
                : undefined} data-testid="commit">
                        ${busy === "commit" ? t("committing") : t("commit")}
                      </button>
            <button type="button" onClick=${discard} disabled=${busy !==
              null} data-testid="discard">
                        ${busy === "discard" ? t("discarding") : t("discard")}
                      </button>
          </div>
                    ${changing(preview) === 0 &&
                      html`<p class="muted" id="nothing-to-commit" data-testid="nothing-to-commit">${
                        t("nothingToCommit")
                      }</p>`}
        `
        : html`<p class="notice" role="status" data-testid="committed">${committedText(committed)}
            ${
          props.session.may("raw") && html`
            <${Link} href=${`/console/imports/${committed.id}`}>${t("openBatch")}<//>
          `
        }</p>`
    }
      <${Review} batch=${preview} storeNames=${storeNames} round=${committed === null ? 0 : 1} />
    </section>`
  }`;
};

const PAGE_ROWS = 500;

export const BatchPage = (props: { session: Session; batchId: number; query: URLSearchParams }) => {
  const storeNames = useStoreNames();
  const offset = Math.max(0, Number(props.query.get("offset") ?? 0) || 0);
  const batch = useLoad(
    (signal) =>
      get<ImportBatch>(
        `/api/v1/imports/${props.batchId}?row_offset=${offset}&row_limit=${PAGE_ROWS}`,
        signal,
      ),
    [props.batchId, offset],
  );
  useTitle(
    batch.load.state === "ready"
      ? t("batchTitle", { batch: batch.load.value.batch_no })
      : t("importsTitle"),
  );
  const page = (at: number) => navigate(`/console/imports/${props.batchId}?offset=${at}`);
  return html`
    <p>
      <${Link} href="/console/imports">← ${t("importsTitle")}<//></p>
        <${Loaded} load=${batch.load} retry=${batch.reload}>${(b: ImportBatch) =>
          html`
            <h1 tabindex="-1">${t("batchTitle", { batch: b.batch_no })}</h1>
            <dl class="summary">
              <div>
                <dt>${t("status")}</dt>
                <dd data-testid="batch-status">
                  <${Code} code=${b.status} />
                </dd>
              </div>
              <div>
                <dt>${t("file")}</dt>
                <dd>${show(b.filename)}</dd>
              </div>
              <div>
                <dt>${t("uploaded")}</dt>
                <dd>
                  <${When} at=${b.uploaded_at} named=${true} />
                </dd>
              </div>
              <div>
                <dt>${t("committed")}</dt>
                <dd>
                  <${When} at=${b.committed_at} named=${true} />
                </dd>
              </div>
              <div>
                <dt>${t("reason")}</dt>
                <dd>${show(b.change_reason)}</dd>
              </div>
            </dl>
            <${Counts} counts=${b.action_counts} />
            <p class="muted">${t("rowsShown", {
              // Past the last row (an offset typed into the address): none shown.
              from: b.rows.length === 0 ? 0 : offset + 1,
              to: b.rows.length === 0 ? 0 : Math.min(b.total_rows, offset + b.rows.length),
              total: b.total_rows,
            })}</p>
            <div class="pager">
              <button type="button" disabled=${offset === 0} onClick=${() =>
                page(Math.max(0, offset - PAGE_ROWS))}>${t("previous")}</button>
              <button type="button" disabled=${offset + PAGE_ROWS >= b.total_rows} onClick=${() =>
                page(offset + PAGE_ROWS)}>${t("next")}</button>
            </div>
            <${RowsByAction} rows=${b.rows} storeNames=${storeNames} />
          `}<//>
  `;
};
