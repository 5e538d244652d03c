/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
// The browser console: sign-in, the session's header, and the page of the current path.
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import {
  ApiError,
  call,
  type Dataset,
  get,
  type Permission,
  type SessionInfo,
  whenUnauthorized,
} from "./api.ts";
import { type Lang, language, setLanguage, t } from "./i18n.ts";
import { html, Link, useLocation } from "./ui.ts";
import { SignIn } from "./pages/signin.ts";
import { PortfolioPage } from "./pages/portfolio.ts";
import { StoresPage } from "./pages/stores.ts";
import { StorePage } from "./pages/store.ts";
import { DayPage } from "./pages/day.ts";
import { BatchPage, ImportsPage } from "./pages/imports.ts";
import { ChangesPage } from "./pages/changes.ts";

export interface Session {
  readonly info: SessionInfo;
  readonly dataset: Dataset;
  readonly may: (permission: Permission) => boolean;
}

const sessionOf = (info: SessionInfo, dataset: Dataset): Session => ({
  info,
  dataset,
  may: (permission) =>
    info.permissions.includes(permission) && info.permissions.includes("read") &&
    (permission !== "write" || info.can_write),
});

const LanguageSwitch = (props: { onChange: () => void }) =>
  html`
    <label class="language">
      <span>${t("language")}</span>
      <select
        value=${language()}
        onChange=${(event: Event) => {
          setLanguage((event.target as HTMLSelectElement).value as Lang);
          props.onChange();
        }}
      >
        <option value="en">English</option>
        <option value="zh-CN">简体中文</option>
      </select>
    </label>
  `;

const Header = (props: { session: Session; onSignOut: () => void; onLanguage: () => void }) => {
  const { info, dataset } = props.session;
  const perms = info.permissions.map((p) =>
    t(p === "read" ? "permRead" : p === "write" ? "permWrite" : "permRaw")
  );
  return html`
    <header class="top">
      <div class="brand">
        <${Link} href="/console/portfolio">${t("appTitle")}<//></div>
        <nav aria-label=${t("nav")}>
          <${Link} href="/console/portfolio">${t("navPortfolio")}<//>
          <${Link} href="/console/stores">${t("navStores")}<//>
          ${props.session.may("write") &&
            html`<${Link} href="/console/imports">${t("navImports")}<//>`}
          ${props.session.may("raw") &&
            html`<${Link} href="/console/changes">${t("navChanges")}<//>`}
        </nav>
        <div class="who">
          <span data-testid="member">${t("you")} <strong>${info.name ?? info.member}</strong></span>
          <span data-testid="permissions">${t("may")}: ${perms.join(
            ", ",
          )} · ${info.store_ids === null
            ? t("allStores")
            : t("someStores", { n: info.store_ids.length })}${info.permissions.includes("write") &&
              !info.can_write
            ? ` ${t("readOnlyRole")}`
            : ""}</span>
          <${LanguageSwitch} onChange=${props.onLanguage} />
          <button type="button" onClick=${props.onSignOut}>${t("signOut")}</button>
        </div>
        <p class="dataset" data-testid="dataset">
          ${t("datasetBanner")}: <strong>${dataset.label}</strong> · ${t("range")} ${dataset
            .start} – ${dataset.end}
          · ${t("policy")} ${dataset.source_policy} · ${t("timezone")} ${dataset.timezone} · ${t(
            "unit",
          )} ${dataset.unit}
        </p>
      </header>
  `;
};

const Page = (props: { session: Session }) => {
  const { path, query } = useLocation();
  const parts = path.split("/").filter((p) => p !== "");
  // /console/stores/:id/days/:date, /console/stores/:id, /console/stores, /console/imports/:id,
  // /console/imports, /console/changes; anything else is the portfolio, the landing page.
  if (parts[0] === "console" && parts[1] === "stores" && parts[2] !== undefined) {
    const storeId = Number(parts[2]);
    if (parts[3] === "days" && parts[4] !== undefined) {
      return html`<${DayPage} session=${props.session} storeId=${storeId} date=${parts[4]} />`;
    }
    return html`<${StorePage} session=${props.session} storeId=${storeId} query=${query} />`;
  }
  if (parts[0] === "console" && parts[1] === "changes") {
    return html`<${ChangesPage} session=${props.session} />`;
  }
  if (parts[0] === "console" && parts[1] === "imports") {
    return parts[2] === undefined
      ? html`<${ImportsPage} session=${props.session} />`
      : html`<${BatchPage} session=${props.session} batchId=${Number(parts[2])} query=${query} />`;
  }
  if (parts[0] === "console" && parts[1] === "stores") {
    return html`<${StoresPage} session=${props.session} />`;
  }
  return html`<${PortfolioPage} session=${props.session} query=${query} />`;
};

const App = () => {
  const [session, setSession] = useState<Session | null | undefined>(undefined);
  const [message, setMessage] = useState<string | null>(null);
  const [, setLang] = useState(language());

  const start = async () => {
    try {
      const [info, dataset] = await Promise.all([
        get<SessionInfo>("/auth/session"),
        get<Dataset>("/api/v1/dataset"),
      ]);
      if (location.pathname === "/" || location.pathname === "/console") {
        history.replaceState(null, "", "/console/portfolio");
      }
      setSession(sessionOf(info, dataset));
    } catch (error) {
      setSession(null);
      if (error instanceof ApiError && error.status !== 401) setMessage(error.message);
    }
  };

  useEffect(() => {
    whenUnauthorized(() => {
      setSession(null);
      setMessage(t("sessionEnded"));
    });
    start();
  }, []);

  const signOut = async () => {
    try {
      await call("POST", "/auth/logout", { body: {} });
    } finally {
      setSession(null);
      setMessage(t("signedOut"));
    }
  };

  if (session === undefined) return html`<p class="muted" role="status">${t("loading")}</p>`;
  if (session === null) {
    return html`
      <div class="signin-page">
        <div class="signin-top">
          <${LanguageSwitch} onChange=${() => setLang(language())} />
        </div>
        <${SignIn} message=${message} onSignedIn=${() => {
          setMessage(null);
          start();
        }} />
      </div>
    `;
  }
  return html`
    <a class="skip" href="#main">${t("skip")}</a>
    <${Header}
      session=${session}
      onSignOut=${signOut}
      onLanguage=${() => setLang(language())}
    />
    <main id="main" key=${language()}>
      <${Page} session=${session} />
    </main>
  `;
};

render(html`<${App} />`, document.getElementById("app")!);
