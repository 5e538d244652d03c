/// <reference lib="dom" />
// The catalog: every store the key may see, searchable and filterable.
import { useMemo, useState } from "preact/hooks";
import { type CatalogResponse, type CatalogStore, get } from "../api.ts";
import { t, words } from "../i18n.ts";
import type { Session } from "../main.ts";
import {
  addDays,
  Code,
  formatCount,
  html,
  Link,
  Loaded,
  show,
  Table,
  useLoad,
  useTitle,
} from "../ui.ts";
import { ExportLinks } from "./store_extra.ts";

const distinct = (values: ReadonlyArray<string | null>) =>
  [...new Set(values.filter((v): v is string => v !== null))].sort();

const Select = (props: {
  label: string;
  value: string;
  options: ReadonlyArray<string>;
  words?: (value: string) => string;
  onChange: (value: string) => void;
}) =>
  html`
    <label>
      <span>${props.label}</span>
      <select
        value=${props.value}
        onChange=${(event: Event) => props.onChange((event.target as HTMLSelectElement).value)}
      >
          <option value="">${t("all")}</option>
          ${props.options.map((o) =>
            html`<option value=${o}>${props.words ? props.words(o) : o}</option>`
          )}
        </select>
    </label>
  `;

// The filters in the address (q, brand, city, stage, key_store), so that a reload, Back from a
// store and a link sent on show the same list. Each change replaces the address: typing a search
// does not fill the browser's history.
const FILTERS = ["q", "brand", "city", "stage", "key_store"] as const;
type Filters = Record<typeof FILTERS[number], string>;

const filtersOf = (query: URLSearchParams): Filters =>
  Object.fromEntries(FILTERS.map((name) => [name, query.get(name) ?? ""])) as Filters;

const showFilters = (filters: Filters) => {
  const query = new URLSearchParams();
  for (const name of FILTERS) if (filters[name] !== "") query.set(name, filters[name]);
  const search = query.size === 0 ? "" : `?${query}`;
  if (search !== location.search) history.replaceState(null, "", `${location.pathname}${search}`);
};

const Catalog = (props: { stores: ReadonlyArray<CatalogStore>; query: URLSearchParams }) => {
  const [filters, setFilters] = useState(() => filtersOf(props.query));
  const set = (name: keyof Filters) => (value: string) => {
    const next = { ...filters, [name]: value };
    setFilters(next);
    showFilters(next);
  };
  const { q: text, brand, city, stage, key_store: key } = filters;
  const [setText, setBrand, setCity, setStage, setKey] = FILTERS.map(set);
  const brands = useMemo(() => distinct(props.stores.map((s) => s.brand_name)), [props.stores]);
  const cities = useMemo(() => distinct(props.stores.map((s) => s.city)), [props.stores]);
  const stages = useMemo(() => distinct(props.stores.map((s) => s.stage)), [props.stores]);
  const needle = text.trim().toLowerCase();
  const shown = props.stores.filter((s) =>
    (needle === "" ||
      [s.name, s.store_code, s.city ?? "", s.brand_name].some((v) =>
        v.toLowerCase().includes(needle)
      )) &&
    (brand === "" || s.brand_name === brand) &&
    (city === "" || s.city === city) &&
    (stage === "" || s.stage === stage) &&
    (key === "" || s.key_store_status === key)
  );
  return html`
    <div class="filters" role="search">
      <label>
        <span>${t("search")}</span>
        <input
          type="search"
          placeholder=${t("searchHint")}
          value=${text}
          onInput=${(event: Event) => setText((event.target as HTMLInputElement).value)}
        />
      </label>
      <${Select} label=${t("brand")} value=${brand} options=${brands} onChange=${setBrand} />
      <${Select} label=${t("city")} value=${city} options=${cities} onChange=${setCity} />
      <${Select} label=${t("stage")} value=${stage} options=${stages} words=${words}
        onChange=${setStage} />
      <${Select}
        label=${t("keyStore")}
        value=${key}
        options=${["MARKED", "UNCONFIRMED"]}
        words=${(v: string) => t(v as "MARKED" | "UNCONFIRMED")}
        onChange=${setKey}
      />
    </div>
    <p class="muted" role="status">${t("storesShown", {
      n: formatCount(shown.length),
      total: formatCount(props.stores.length),
    })}</p>
    <${Table}
      caption=${t("storesTitle")}
      head=${[
        t("store"),
        t("code"),
        t("brand"),
        t("city"),
        t("stage"),
        t("keyStore"),
        t("devices"),
      ]}
    >
          ${shown.map((s) =>
            html`
              <tr data-testid="store-row" data-store=${s.id}>
                <th scope="row">
                  <${Link} href=${`/console/stores/${s.id}`}>${s.name}<//></th>
                        <td>${s.store_code}</td>
                        <td>${s.brand_name}</td>
                        <td>${show(s.city)}</td>
                        <td>${s.stage === null
                          ? show(s.stage)
                          : html`<${Code} code=${s.stage} />`}</td>
                        <td><${Code} code=${s.key_store_status} /></td>
                        <td class="devices">
                          ${s.device_count} · <span class="ok">${s.online_count} ${t(
                            "online",
                          )}</span> ·
                          <span class="bad">${s.offline_count} ${t(
                            "offline",
                          )}</span>${s.unknown_count > 0
                            ? html`
                              · ${s.unknown_count} ${t("unknown")}
                            `
                            : ""}
                        </td>
                      </tr>
            `
          )}
        <//>
  `;
};

export const StoresPage = (
  props: { session: Session; query: URLSearchParams; visit: number },
) => {
  useTitle(t("storesTitle"));
  const end = props.session.dataset.end;
  const { load, reload } = useLoad(
    (signal) => get<CatalogResponse>("/api/v1/catalog", signal),
    [],
  );
  return html`
    <h1 tabindex="-1">${t("storesTitle")}</h1>
    <${ExportLinks} start=${addDays(end, -29)} end=${end} />
    <${Loaded} load=${load} retry=${reload}>${(value: CatalogResponse) =>
      // Drawn anew from the address at each move through the history (a link, Back, Forward).
      html`<${Catalog} key=${props.visit} stores=${value.stores} query=${props.query} />`}<//>
  `;
};
