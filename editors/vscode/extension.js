// The VS Code extension of the .wf language: it starts `aguic lsp`, the
// language server of the aguic binary, over stdio for every .wf file. The
// grammar and the language configuration need no code; this file only
// starts, restarts and stops the server.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

/** @type {LanguageClient | undefined} */
let client;

/** Starts the server unless `aguic.lsp.enabled` is false. */
async function start() {
  const config = vscode.workspace.getConfiguration('aguic');
  if (!config.get('lsp.enabled', true)) {
    return;
  }
  const command = config.get('path') || 'aguic';
  client = new LanguageClient(
    'aguic',
    'aguic language server',
    { command, args: ['lsp'] },
    {
      documentSelector: [
        { scheme: 'file', language: 'wf' },
        { scheme: 'untitled', language: 'wf' },
      ],
    },
  );
  try {
    await client.start();
  } catch (err) {
    client = undefined;
    vscode.window.showErrorMessage(
      `aguic: could not start "${command} lsp" (${err.message || err}); set aguic.path to the aguic binary`,
    );
  }
}

/** Stops the server, if it runs. */
async function stop() {
  const running = client;
  client = undefined;
  if (running) {
    await running.stop();
  }
}

async function restart() {
  await stop();
  await start();
}

/** @param {vscode.ExtensionContext} context */
async function activate(context) {
  context.subscriptions.push(
    vscode.commands.registerCommand('aguic.restartLanguageServer', restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration('aguic')) {
        restart();
      }
    }),
  );
  await start();
}

function deactivate() {
  return stop();
}

module.exports = { activate, deactivate };
