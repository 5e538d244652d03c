// Facts about the request being served that the access log reports: its id and, once known, the member.
import { Context } from "effect";

export interface RequestNoteShape {
  readonly requestId: string;
  memberId: number | null;
}

export class RequestNote extends Context.Tag("Http/RequestNote")<RequestNote, RequestNoteShape>() {}
