// The one mapping of failures to answers: contract errors, request-decoding failures, unknown paths
// and defects all leave as {error: {code, message}} in the request's language; every answer carries
// X-Request-ID. The request's language is set here for the handlers (language.ts).
import * as HttpServerRequest from "@effect/platform/HttpServerRequest";
import * as HttpServerResponse from "@effect/platform/HttpServerResponse";
import type * as HttpApp from "@effect/platform/HttpApp";
import { Cause, Effect, Option } from "effect";
import { type Message, messageIn, statusOfError } from "../domain/errors.ts";
import { retryAfterOf, statusOfCode } from "../domain/error_codes.ts";
import {
  DEFAULT_LANGUAGE,
  type Language,
  negotiateLanguage,
  pick,
  withLanguage,
} from "../domain/language.ts";
import { Messages } from "../domain/messages.ts";
import { NO_SUCH_ID } from "../domain/common.ts";
import { RequestNote } from "../domain/request.ts";

const errorBody = (status: number, code: string, message: string, requestId: string) =>
  HttpServerResponse.unsafeJson(
    { error: { code, message } },
    { status, headers: { "x-request-id": requestId, ...retryAfterOf(code) } },
  );

const refusal = (m: Message, language: Language, requestId: string) =>
  errorBody(statusOfCode(m.code), m.code, pick(m, language), requestId);

interface DecodeIssue {
  readonly _tag?: string;
  readonly path?: ReadonlyArray<unknown>;
  readonly message?: string;
}

const MAX_ISSUES = 5;
const MAX_ISSUE_CHARS = 160;

// A decode message names the field and the problem, never the value: the library's messages end
// in ", actual <value>", and a value may be a credential (an access key sent as ["esk_..."]) or
// megabytes long. A field name is shown only when it is short and plain: an unknown field's name is
// the client's text, and may be a key.
const PLAIN_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,31}$/;

const fieldOf = (issue: DecodeIssue, zh: boolean) =>
  (issue.path ?? [])
    .map((p) => {
      const name = String(p);
      return typeof p === "number" || PLAIN_NAME.test(name) ? name : zh ? "（字段）" : "(field)";
    })
    .join(".") || (zh ? "请求" : "request");

const cut = (text: string) =>
  text.length > MAX_ISSUE_CHARS ? `${text.slice(0, MAX_ISSUE_CHARS)}…` : text;

const issueText = (issue: DecodeIssue) => {
  const raw = issue.message ?? "invalid";
  const actual = raw.indexOf(", actual ");
  const what = (actual >= 0 ? raw.slice(0, actual) : raw).split("\n")[0];
  return cut(`${fieldOf(issue, false)}: ${what}`);
};

// The Chinese of the contract's own expectations (the `message` annotations of src/domain and
// src/api); any other expectation is the schema library's English, said in general words.
const EXPECTED_ZH: ReadonlyArray<readonly [RegExp, (m: RegExpExecArray) => string]> = [
  [/^expected a calendar date YYYY-MM-DD/, () => "应为日历日期 YYYY-MM-DD（0001 至 9999 年）"],
  [/^expected an integer id >= 1/, () => "应为大于等于 1 的整数编号"],
  [/^expected an id of at most (\d+)/, (m) => `编号最大为 ${m[1]}`],
  [/^expected an integer >= 0/, () => "应为大于等于 0 的整数"],
  [/^expected text without NUL/, () => "文本不能含 NUL 字符或不成对的代理项"],
  [/^expected one line of text/, () => "应为一行文本，不含控制字符或不可见的格式字符"],
  [/^expected (\d+) to (\d+) characters/, (m) => `应为 ${m[1]} 至 ${m[2]} 个字符`],
  [/^expected a cursor/, () => "应为先前某页的 next_cursor 或 head_cursor 给出的游标"],
  [/^expected an RFC 3339 instant/, () => "应为 RFC 3339 时刻，如 2026-11-20T08:00:00Z"],
  [/^expected a data token/, () => "应为先前响应的 Data-Token 头给出的令牌"],
  [
    /^expected import actions separated by commas \((.*)\)/,
    (m) => `应为以逗号分隔的导入动作（${m[1]}）`,
  ],
  [/^expected a limit from 1 to (\d+)/, (m) => `应为 1 至 ${m[1]} 之间的数量`],
  [
    /^expected store ids >= 1 separated by commas/,
    () => "应为以逗号分隔、大于等于 1 的门店编号，如 1,2,3",
  ],
  [/^expected at most (\d+) store ids/, (m) => `最多 ${m[1]} 个门店编号`],
  [/^the quality check reads the current data only/, () => "质量检查只读取当前数据；不接受此参数"],
];

const issueTextZh = (issue: DecodeIssue) => {
  const field = fieldOf(issue, true);
  if (issue._tag === "Missing") return cut(`${field}：缺少此项`);
  if (issue._tag === "Unexpected") return cut(`${field}：不接受此项`);
  const raw = (issue.message ?? "").split("\n")[0];
  for (const [pattern, zh] of EXPECTED_ZH) {
    const found = pattern.exec(raw);
    if (found !== null) return cut(`${field}：${zh(found)}`);
  }
  return cut(`${field}：值不符合要求`);
};

// An optional parameter's schema is a union with undefined: a bad value fails both members, and
// "Expected undefined" says nothing the other issue of the same field does not.
const withoutUndefined = (issues: ReadonlyArray<DecodeIssue>) => {
  const pathOf = (issue: DecodeIssue) => JSON.stringify(issue.path ?? []);
  const named = new Set(
    issues.filter((i) => !/^Expected undefined\b/.test(i.message ?? "")).map(pathOf),
  );
  return issues.filter((i) =>
    !/^Expected undefined\b/.test(i.message ?? "") || !named.has(pathOf(i))
  );
};

export const decodeMessage = (all: ReadonlyArray<DecodeIssue>, language: Language = "en") => {
  const issues = withoutUndefined(all);
  if (issues.length === 0) return pick(Messages.requestNotValid(), language);
  const zh = language === "zh-CN";
  const more = issues.length - MAX_ISSUES;
  return issues.slice(0, MAX_ISSUES).map(zh ? issueTextZh : issueText).join(zh ? "；" : "; ") +
    (more > 0 ? (zh ? `；另有 ${more} 项` : `; and ${more} more`) : "");
};

export const contractMiddleware = <E, R>(
  app: HttpApp.Default<E, R>,
): HttpApp.Default<never, R | HttpServerRequest.HttpServerRequest> =>
  Effect.gen(function* () {
    const note = yield* Effect.serviceOption(RequestNote);
    const requestId = Option.isSome(note) ? note.value.requestId : crypto.randomUUID();
    // Chosen by the front door; a request that did not pass it chooses here.
    const language = Option.isSome(note) && note.value.language !== undefined
      ? note.value.language
      : negotiateLanguage((yield* HttpServerRequest.HttpServerRequest).headers["accept-language"]);
    // A request's fiber starts with the default language: only another one is set.
    const inLanguage = language === DEFAULT_LANGUAGE ? app : withLanguage(language)(app);
    const response = yield* Effect.catchAllCause(inLanguage, (cause) =>
      Effect.gen(function* () {
        const error = Cause.squash(cause) as { _tag?: string } | undefined;
        const tag = error?._tag ?? "";
        const status = statusOfError(error);
        if (status !== undefined) {
          const found = error as { code: string; message: string; zh?: string };
          return errorBody(status, found.code, messageIn(found, language), requestId);
        }
        if (tag === "HttpApiDecodeError") {
          const decode = error as { issues?: ReadonlyArray<DecodeIssue> };
          const issues = decode.issues ?? [];
          // A path that names an id past every id: an unknown object, as the contract says.
          const named = withoutUndefined(issues);
          if (named.length > 0 && named.every((i) => i.message === NO_SUCH_ID)) {
            return refusal(Messages.idBeyondAll(), language, requestId);
          }
          return refusal(
            Messages.decodeFailed(decodeMessage(issues, "en"), decodeMessage(issues, "zh-CN")),
            language,
            requestId,
          );
        }
        if (tag === "RouteNotFound") {
          return refusal(Messages.noEndpoint(), language, requestId);
        }
        if (tag === "RequestError") {
          // A body that arrived whole but does not parse as JSON.
          if ((error as { cause?: unknown }).cause instanceof SyntaxError) {
            return refusal(Messages.jsonMalformed(), language, requestId);
          }
          return refusal(Messages.bodyNotRead(), language, requestId);
        }
        if (Cause.isInterruptedOnly(cause)) {
          return refusal(Messages.interrupted(), language, requestId);
        }
        yield* Effect.logError("request failed", cause).pipe(
          Effect.annotateLogs("request_id", requestId),
        );
        return refusal(Messages.internal(requestId), language, requestId);
      }));
    // A body of known size says so, so that the access log (and the wire) carry its length.
    const sized = response.body._tag === "Uint8Array"
      ? HttpServerResponse.setHeader(
        response,
        "content-length",
        String(response.body.contentLength),
      )
      : response;
    return HttpServerResponse.setHeader(sized, "x-request-id", requestId);
  });
