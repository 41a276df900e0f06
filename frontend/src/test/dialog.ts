// happy-dom's <dialog> opens and closes but has no modality: showModal() only sets `open`, and
// Escape does nothing. Browsers send Escape to the topmost modal dialog as a close request: a
// cancelable `cancel` event, then close() unless it was cancelled. That part is emulated here, for
// the tests only; focus containment and the inert page behind are the browser's (e2e/ checks them).

const PATCHED = Symbol.for("ragchat.test.modalDialog");

// Setup files run once per test file, in one shared happy-dom (isolate: false): patch once. Not in
// the files that run under node (no DOM).
if (typeof HTMLDialogElement !== "undefined" && !(PATCHED in HTMLDialogElement.prototype)) patchModalDialogs();

function patchModalDialogs() {
  const modals: HTMLDialogElement[] = [];
  const { showModal, close } = HTMLDialogElement.prototype;
  // The EventTarget that nodes inherit from (happy-dom's global EventTarget is another class).
  const eventTarget = Object.getPrototypeOf(Node.prototype) as EventTarget;
  const { dispatchEvent } = eventTarget;
  Object.defineProperty(HTMLDialogElement.prototype, PATCHED, { value: true });

  HTMLDialogElement.prototype.showModal = function (this: HTMLDialogElement) {
    if (this.open) throw new DOMException("The dialog is already open.", "InvalidStateError");
    showModal.call(this);
    modals.push(this);
  };

  HTMLDialogElement.prototype.close = function (this: HTMLDialogElement, returnValue?: string) {
    const index = modals.indexOf(this);
    if (index >= 0) modals.splice(index, 1);
    close.call(this, returnValue);
  };

  // Escape's default action runs after the keydown went through the page, and not when a handler
  // called preventDefault. happy-dom dispatches recursively along the event's path: only the
  // outermost call (event phase NONE on entry) is the whole dispatch.
  eventTarget.dispatchEvent = function (this: EventTarget, event: Event) {
    const outermost = event.eventPhase === Event.NONE;
    const result = dispatchEvent.call(this, event);
    const top = modals.at(-1);
    if (outermost && top && event.type === "keydown" && (event as KeyboardEvent).key === "Escape" && !event.defaultPrevented) {
      const cancel = new Event("cancel", { cancelable: true });
      if (top.dispatchEvent(cancel)) top.close();
    }
    return result;
  };
}
